// The C++ side of bench/bench_zmq.py: libswsscommon's ZmqProducerStateTable and
// ZmqConsumerStateTable (persistence off), one role a process.
//
//   zmq_bench produce <database_config.json> <endpoint> <count> [unique]
//       builds <count> route-like changes (4 fields; with "unique", values that differ per
//       key, as bench_zmq.py's unique_fields() makes them) in memory, prints "ready", waits for a line
//       on stdin, prints the CLOCK_MONOTONIC nanoseconds, sends each change with set(), prints
//       {"producer_cpu_ns": ..., "producer_thread_ns": ...} (getrusage: the process, libzmq's
//       thread included, and the sending thread alone, over the sends), then "sent", and waits
//       for another line before exiting (linger 0 would drop what is queued)
//   zmq_bench consume <database_config.json> <endpoint> <count>
//       binds a ZmqServer with a ZmqConsumerStateTable (pop batch 128) under swss::Select,
//       prints "ready", pops until <count> changes arrived, and prints
//       {"count": N, "first_ns": ..., "last_ns": ...}: CLOCK_MONOTONIC at the start of the pop
//       that returned the first change and at the end of the pop that returned the last,
//       "early_timeouts": times select() said TIMEOUT well before its 1 s time-out, and
//       "cpu_ns": the process's CPU (every thread, getrusage) from "ready" to the last pop
#include <sys/resource.h>
#include <time.h>

#include <deque>
#include <iostream>
#include <string>
#include <vector>

#include "dbconnector.h"
#include "select.h"
#include "zmqclient.h"
#include "zmqconsumerstatetable.h"
#include "zmqproducerstatetable.h"
#include "zmqserver.h"

static long long nowNs()
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static long long cpuNs(int who)
{
    struct rusage ru;
    getrusage(who, &ru);
    return ((long long)ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000LL
        + ((long long)ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000LL;
}

static std::string routeKey(long i)
{
    return std::to_string(10 + i / 65536) + "." + std::to_string(i / 256 % 256) + "." + std::to_string(i % 256) + ".0/24";
}

static std::vector<swss::FieldValueTuple> uniqueFields(long i)
{
    std::string a = std::to_string((i >> 8) & 255), b = std::to_string(i & 255);
    return {
        {"nexthop", "10." + a + "." + b + ".1,10." + a + "." + b + ".3"},
        {"ifname", "Ethernet" + std::to_string(i % 128 * 4) + ",Ethernet" + std::to_string((i + 1) % 128 * 4)},
        {"weight", std::to_string(i % 7 + 1) + "," + std::to_string(i % 5 + 1)},
        {"protocol", "bgp" + std::to_string(i % 1000)}};
}

static int produce(swss::DBConnector &db, const std::string &endpoint, long count, bool unique)
{
    swss::ZmqClient client(endpoint);
    swss::ZmqProducerStateTable p(&db, "ROUTE_TABLE", client, false);
    std::vector<std::pair<std::string, std::vector<swss::FieldValueTuple>>> routes;
    routes.reserve(count);
    for (long i = 0; i < count; i++)
    {
        routes.emplace_back(routeKey(i), unique ? uniqueFields(i) : std::vector<swss::FieldValueTuple>{
            {"nexthop", "10.0.0.1,10.0.0.3"}, {"ifname", "Ethernet0,Ethernet4"},
            {"weight", "1,1"}, {"protocol", "bgp"}});
    }
    std::cout << "ready" << std::endl;
    std::string line;
    std::getline(std::cin, line);
    std::cout << nowNs() << std::endl;
    long long cpu = cpuNs(RUSAGE_SELF), thread = cpuNs(RUSAGE_THREAD);
    for (const auto &r : routes)
    {
        p.set(r.first, r.second);
    }
    cpu = cpuNs(RUSAGE_SELF) - cpu;
    thread = cpuNs(RUSAGE_THREAD) - thread;
    std::cout << "{\"producer_cpu_ns\": " << cpu << ", \"producer_thread_ns\": " << thread << "}" << std::endl;
    std::cout << "sent" << std::endl;
    std::getline(std::cin, line);
    return 0;
}

static int consume(swss::DBConnector &db, const std::string &endpoint, long count)
{
    swss::ZmqServer server(endpoint);
    swss::ZmqConsumerStateTable c(&db, "ROUTE_TABLE", server, 128, 0, false);
    swss::Select sel;
    sel.addSelectable(&c);
    std::cout << "ready" << std::endl;
    long long cpu = cpuNs(RUSAGE_SELF);
    std::deque<swss::KeyOpFieldsValuesTuple> batch;
    long got = 0;
    long long first = 0, last = 0;
    int early = 0;
    long long lastSeen = nowNs();
    while (got < count)
    {
        swss::Selectable *ready = nullptr;
        int rc = sel.select(&ready, 1000);
        if (rc == swss::Select::TIMEOUT)
        {
            // Select::select returns TIMEOUT at once, not after the time-out, when a wake-up's
            // changes were already taken by an earlier pops(): counted, and popped on.
            if (nowNs() - lastSeen < 900000000LL)
            {
                early++;
            }
            else if (nowNs() - lastSeen > 60000000000LL)
            {
                std::cerr << "nothing for 60 s after " << got << std::endl;
                return 1;
            }
            if (!c.hasData())
            {
                continue;
            }
        }
        else if (rc != swss::Select::OBJECT)
        {
            std::cerr << "select returned " << rc << " after " << got << std::endl;
            return 1;
        }
        long long start = nowNs();
        c.pops(batch);
        last = nowNs();
        if (!batch.empty() && !first)
        {
            first = start;
        }
        got += (long)batch.size();
        if (!batch.empty())
        {
            lastSeen = last;
        }
        batch.clear();
    }
    std::cout << "{\"count\": " << got << ", \"first_ns\": " << first << ", \"last_ns\": " << last
              << ", \"early_timeouts\": " << early << ", \"cpu_ns\": " << cpuNs(RUSAGE_SELF) - cpu << "}" << std::endl;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 5 && !(argc == 6 && std::string(argv[5]) == "unique"))
    {
        std::cerr << "usage: zmq_bench produce|consume CONFIG ENDPOINT COUNT [unique]" << std::endl;
        return 2;
    }
    std::string mode = argv[1];
    swss::SonicDBConfig::initialize(argv[2]);
    swss::DBConnector db("APPL_DB", 0, true);
    long count = std::stol(argv[4]);
    if (mode == "produce")
    {
        return produce(db, argv[3], count, argc == 6);
    }
    if (mode == "consume")
    {
        return consume(db, argv[3], count);
    }
    std::cerr << "bad mode" << std::endl;
    return 2;
}
