/* Prints the records of a range of a topic from its first retained
 * offset, following the range until no record arrives for IDLE_MS.
 *
 *   cc consumer.c -o consumer $(pkg-config --cflags --libs vtop)
 *   ./consumer client.yaml orders 0 2000
 *
 * Each line: offset, timestamp (ms), key and value as text. Exit 0 when it
 * went idle, 1 on an error. */
#include <stdio.h>
#include <stdlib.h>

#include <vtop/vtop.h>

int
main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: %s CLIENT.yaml TOPIC RANGE_INDEX IDLE_MS\n", argv[0]);
        return 2;
    }
    char err[512];
    vtop_client *client;
    int rc = vtop_client_new(argv[1], &client, err, sizeof(err));
    if (rc != VTOP_OK) {
        fprintf(stderr, "connect: %s: %s\n", vtop_err_name(rc), err);
        return 1;
    }
    vtop_consumer *s;
    rc = vtop_consumer_new(client, argv[2], (uint32_t)atoi(argv[3]), VTOP_OFFSET_EARLIEST, NULL,
                           &s);
    if (rc != VTOP_OK) {
        fprintf(stderr, "consumer: %s: %s\n", vtop_err_name(rc), vtop_client_error(client));
        vtop_client_free(client);
        return 1;
    }
    unsigned long n = 0;
    struct vtop_record r;
    while ((rc = vtop_consumer_next(s, &r, atoi(argv[4]))) == 1) {
        printf("%llu\t%lld\t%.*s\t%.*s\n", (unsigned long long)r.offset,
               (long long)r.timestamp_ms, (int)r.key_len, r.key_len ? (const char *)r.key : "",
               (int)r.value_len, r.value_len ? (const char *)r.value : "");
        n++;
    }
    if (rc < 0)
        fprintf(stderr, "consume: %s: %s\n", vtop_err_name(rc), vtop_consumer_error(s));
    else
        fprintf(stderr, "%lu records; at offset %llu, the high-water mark is %llu\n", n,
                (unsigned long long)vtop_consumer_position(s),
                (unsigned long long)vtop_consumer_hwm(s));
    vtop_consumer_free(s);
    vtop_client_free(client);
    return rc < 0 ? 1 : 0;
}
