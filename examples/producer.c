/* Writes each line of stdin as one record to a range of a topic, then
 * waits until every record is acknowledged and prints where each went.
 *
 *   cc producer.c -o producer $(pkg-config --cflags --libs vtop)
 *   printf 'a\nb\n' | ./producer client.yaml orders 0
 *
 * Exit 0 when every record was acknowledged, 1 otherwise. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vtop/vtop.h>

static unsigned long acked, failed;

/* Runs inside vtop_produce / poll / flush, once per record. */
static void
on_delivery(int err, uint64_t offset, void *arg)
{
    unsigned long line = (unsigned long)(uintptr_t)arg;
    if (err != VTOP_OK) {
        fprintf(stderr, "line %lu: %s\n", line, vtop_err_name(err));
        failed++;
        return;
    }
    printf("line %lu -> offset %llu\n", line, (unsigned long long)offset);
    acked++;
}

int
main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s CLIENT.yaml TOPIC RANGE_INDEX < lines\n", argv[0]);
        return 2;
    }
    char err[512];
    vtop_client *client;
    int rc = vtop_client_new(argv[1], &client, err, sizeof(err));
    if (rc != VTOP_OK) {
        fprintf(stderr, "connect: %s: %s\n", vtop_err_name(rc), err);
        return 1;
    }
    struct vtop_producer_config cfg;
    vtop_producer_config_init(&cfg);
    cfg.linger_ms = 2;
    vtop_producer *p;
    rc = vtop_producer_new(client, argv[2], (uint32_t)atoi(argv[3]), &cfg, &p);
    if (rc != VTOP_OK) {
        fprintf(stderr, "producer: %s: %s\n", vtop_err_name(rc), vtop_client_error(client));
        vtop_client_free(client);
        return 1;
    }
    char line[4096];
    unsigned long n = 0;
    while (rc == VTOP_OK && fgets(line, sizeof(line), stdin) != NULL) {
        size_t len = strcspn(line, "\n");
        n++;
        do { /* a full buffer: let acknowledgements free room */
            rc = vtop_produce(p, NULL, 0, line, len, on_delivery, (void *)(uintptr_t)n);
        } while (rc == VTOP_ERR_QUEUE_FULL && vtop_producer_poll(p, 100) >= 0);
    }
    if (rc == VTOP_OK)
        rc = vtop_producer_flush(p, 60000);
    if (rc != VTOP_OK)
        fprintf(stderr, "produce: %s: %s\n", vtop_err_name(rc), vtop_producer_error(p));
    vtop_producer_free(p);
    vtop_client_free(client);
    fprintf(stderr, "acked %lu of %lu records\n", acked, n);
    return rc == VTOP_OK && failed == 0 && acked == n ? 0 : 1;
}
