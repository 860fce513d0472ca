/* The help text of every `vtopctl meta` subcommand (ctl_meta_help.h): what
 * it does, its flags (those of its getopt table in ctl_meta.c) and an
 * example. */
#include "ctl_meta_help.h"

#include <string.h>

#include "ctl.h"
#include "vt_assert.h"

#define META_COMMON_HELP                                                                  \
    "  --config PATH          admin config (default: $VTOP_ADMIN_CONFIG, then\n"           \
    "                         ~/.config/vtop/admin.yaml)\n"                                \
    "  --endpoint HOST:PORT   ask this admin listener instead of the config's\n"          \
    "                         endpoints (repeatable)\n" CTL_FORMAT_USAGE
#define META_PROPOSAL_HELP                                                                \
    "  --request-id UUID      the dedup key: a retry with the same id returns the\n"      \
    "                         stored result (default: random)\n"                          \
    "  --issued-at-ms MS      the proposer's clock (default: now)\n"
#define META_PROPOSAL_EXIT                                                                \
    "Prints `committed index=N` and the response. Exit: 0 committed, 1 Rejected,\n"        \
    "refused or no server answered, 2 usage or bad config.\n"
#define META_EXIT "Exit: 0 ok, 1 refused or no server answered, 2 usage or bad config.\n"

/* One help text per subcommand: what it does, its flags, an example. */
static const struct {
    const char *name, *usage;
} meta_help[] = {
    {"status",
     "usage: vtopctl meta status [--config ADMIN.yaml] [--endpoint HOST:PORT] [--format F]\n\n"
     "Asks the first endpoint only (no redirect) for its Raft view: node_id, state, term,\n"
     "leader, leader_admin, ready, the indexes and one `member` line per server.\n\n"
     META_COMMON_HELP "\nExample:\n  vtopctl meta status --config admin.yaml --endpoint 127.0.0.1:7004 --json\n\n"
     META_EXIT},
    {"membership",
     "usage: vtopctl meta membership [--config ADMIN.yaml] [--endpoint HOST:PORT]... [--format F]\n\n"
     "Prints the leader's configuration: `voter|learner|spare ID ADDRESS [leader]` per\n"
     "server (asks the first endpoint, then its leader).\n\n"
     META_COMMON_HELP "\nExample:\n  vtopctl meta membership --config admin.yaml\n\n" META_EXIT},
    {"init",
     "usage: vtopctl meta init [--config ADMIN.yaml] --endpoint HOST:PORT\n"
     "                         --members ID=HOST:PORT[,ID=HOST:PORT...] [--format F]\n\n"
     "Bootstraps the first endpoint, an empty server whose id and meta.listen are among\n"
     "--members; as leader it then adds and promotes the other members one at a time.\n"
     "A server that already holds state answers AlreadyInitialized.\n\n"
     "  --members LIST         every voter: id and meta.listen (raft) address\n"
     META_COMMON_HELP "\nExample:\n  vtopctl meta init --config admin.yaml --endpoint 127.0.0.1:7004 \\\n"
     "      --members 1=127.0.0.1:7003,2=127.0.0.1:7013,3=127.0.0.1:7023\n\n" META_EXIT},
    {"add-learner",
     "usage: vtopctl meta add-learner [--config ADMIN.yaml] --id N --address HOST:PORT\n\n"
     "Adds server N (its meta.listen address) as a spare, then a learner. Follows\n"
     "NotLeader to the leader.\n\n"
     "  --id N                 the server's meta.id (>= 1)\n"
     "  --address HOST:PORT    its meta.listen address\n"
     META_COMMON_HELP "\nExample:\n  vtopctl meta add-learner --config admin.yaml --id 4 --address 127.0.0.1:7033\n\n"
     META_EXIT},
    {"promote",
     "usage: vtopctl meta promote [--config ADMIN.yaml] --id N\n\n"
     "Makes learner N a voter once it caught up.\n\n"
     "  --id N                 the server's meta.id (>= 1)\n"
     META_COMMON_HELP "\nExample:\n  vtopctl meta promote --config admin.yaml --id 4\n\n" META_EXIT},
    {"change-membership",
     "usage: vtopctl meta change-membership [--config ADMIN.yaml] --id N --role voter|learner\n\n"
     "Sets server N's role: voter promotes, learner demotes.\n\n"
     "  --id N                 the server's meta.id (>= 1)\n"
     "  --role voter|learner   the new role\n"
     META_COMMON_HELP "\nExample:\n  vtopctl meta change-membership --config admin.yaml --id 3 --role learner\n\n"
     META_EXIT},
    {"remove",
     "usage: vtopctl meta remove [--config ADMIN.yaml] --id N\n\n"
     "Removes server N from the configuration; works on the leader too (it steps down\n"
     "once the change commits).\n\n"
     "  --id N                 the server's meta.id (>= 1)\n"
     META_COMMON_HELP "\nExample:\n  vtopctl meta remove --config admin.yaml --id 4\n\n" META_EXIT},
    {"transfer-leader",
     "usage: vtopctl meta transfer-leader [--config ADMIN.yaml] [--id N]\n\n"
     "Hands leadership to voter N, or to any voter without --id (or with 0).\n\n"
     "  --id N                 the voter to hand over to (default: any)\n"
     META_COMMON_HELP "\nExample:\n  vtopctl meta transfer-leader --config admin.yaml --id 2\n\n" META_EXIT},
    {"register-node",
     "usage: vtopctl meta register-node [--config ADMIN.yaml] --node UUID --addr ADDR\n"
     "                                  [--native-addr ADDR] [--expected-generation G]\n\n"
     "Proposes RegisterNode: the data node UUID at replica-plane address ADDR (and its\n"
     "native address); with --expected-generation a compare-and-set on the node's\n"
     "generation. Nodes in a metadata group register themselves; this is for tests\n"
     "and repairs.\n\n"
     "  --node UUID            the node's node_uuid\n"
     "  --addr ADDR            its replication address (--address is the same)\n"
     "  --native-addr ADDR     its native (client) address\n"
     "  --expected-generation G  the generation it must have now\n"
     META_PROPOSAL_HELP META_COMMON_HELP
     "\nExample:\n  vtopctl meta register-node --config admin.yaml \\\n"
     "      --node 00000000-0000-4000-8000-000000000001 --addr 127.0.0.1:9093 \\\n"
     "      --native-addr 127.0.0.1:9092\n\n" META_PROPOSAL_EXIT},
    {"set-node-state",
     "usage: vtopctl meta set-node-state [--config ADMIN.yaml] --node UUID\n"
     "                                   --state active|draining|dead --expected-generation G\n\n"
     "Proposes SetNodeState, a compare-and-set on the node's generation (see `meta nodes`).\n\n"
     "  --node UUID            the node's node_uuid\n"
     "  --state S              active, draining or dead\n"
     "  --expected-generation G  the generation it must have now\n"
     META_PROPOSAL_HELP META_COMMON_HELP
     "\nExample:\n  vtopctl meta set-node-state --config admin.yaml \\\n"
     "      --node 00000000-0000-4000-8000-000000000003 --state dead --expected-generation 2\n\n"
     META_PROPOSAL_EXIT},
    {"create-topic",
     "usage: vtopctl meta create-topic [--config ADMIN.yaml] --name NAME [--ranges K]\n"
     "                                 [--replication-factor R] [--replicas UUID,...]\n"
     "                                 [--topic-uuid UUID] [--root-range-uuid UUID]\n\n"
     "Proposes CreateTopic: K ranges placed on R registered Active nodes, or on\n"
     "--replicas (docs/METADATA.md \"Placement\"). Prints `TopicCreated topic= topic_epoch=\n"
     "root_range=`.\n\n"
     "  --name NAME            1..249 bytes of [A-Za-z0-9._-]\n"
     "  --ranges K             ranges (1..1024, default 1)\n"
     "  --replication-factor R replicas per range (1..7, default 1; with --replicas:\n"
     "                         their count)\n"
     "  --replicas UUID,...    exactly the nodes to place every range on\n"
     "  --topic-uuid UUID      the topic's id (default: random; --topic is the same)\n"
     "  --root-range-uuid UUID the first range's id (default: random; --root-range too)\n"
     META_PROPOSAL_HELP META_COMMON_HELP
     "\nExample:\n  vtopctl meta create-topic --config admin.yaml --name orders --ranges 2 \\\n"
     "      --replication-factor 3\n\n" META_PROPOSAL_EXIT},
    {"grant-lease",
     "usage: vtopctl meta grant-lease [--config ADMIN.yaml] --range UUID --holder UUID\n"
     "                                --expected-generation G\n\n"
     "Proposes an administrative GrantRangeLease (no expiry) of range UUID to node\n"
     "holder, a compare-and-set on the range's generation. Prints `LeaseGranted\n"
     "fencing_epoch= range_generation=`.\n\n"
     "  --range UUID           the range's id (`topic describe`)\n"
     "  --holder UUID          the node that is to lead it\n"
     "  --expected-generation G  the range generation it must have now\n"
     META_PROPOSAL_HELP META_COMMON_HELP
     "\nExample:\n  vtopctl meta grant-lease --config admin.yaml --range 22222222-2222-4222-8222-222222222222 \\\n"
     "      --holder 00000000-0000-4000-8000-000000000001 --expected-generation 0\n\n"
     META_PROPOSAL_EXIT},
    {"release-lease",
     "usage: vtopctl meta release-lease [--config ADMIN.yaml] --range UUID --holder UUID --epoch E\n\n"
     "Proposes ReleaseRangeLease: holder gives up its lease of the range at fencing epoch E.\n\n"
     "  --range UUID           the range's id\n"
     "  --holder UUID          the node holding the lease\n"
     "  --epoch E              the fencing epoch of that lease\n"
     META_PROPOSAL_HELP META_COMMON_HELP
     "\nExample:\n  vtopctl meta release-lease --config admin.yaml --range 22222222-2222-4222-8222-222222222222 \\\n"
     "      --holder 00000000-0000-4000-8000-000000000001 --epoch 3\n\n" META_PROPOSAL_EXIT},
    {"range-lease",
     "usage: vtopctl meta range-lease [--config ADMIN.yaml] --range UUID [--format F]\n\n"
     "Linearizable read of a range's lease (a Raft barrier on the leader, then its state\n"
     "machine): found= holder= fencing_epoch= lease_epoch= deadline= range_generation=\n"
     "applied_index= read_index=.\n\n"
     "  --range UUID           the range's id\n"
     META_COMMON_HELP "\nExample:\n  vtopctl meta range-lease --config admin.yaml --range 22222222-2222-4222-8222-222222222222\n\n"
     META_EXIT},
    {"nodes",
     "usage: vtopctl meta nodes [--config ADMIN.yaml] [--format F]\n\n"
     "Linearizable paged read of every registered node (every page is fetched).\n\n"
     META_COMMON_HELP "\nExample:\n  vtopctl meta nodes --config admin.yaml --json\n\n" META_EXIT},
};

const char *
ctl_meta__usage(const char *name)
{
    for (size_t i = 0; i < VT_ARRAY_LEN(meta_help); i++)
        if (strcmp(meta_help[i].name, name) == 0)
            return meta_help[i].usage;
    VT_ASSERT(false); /* every row of ctl_meta_cmds has its help (meta.sh checks) */
    return "";
}
