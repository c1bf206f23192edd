// The C++ side of bench/bench_cpp.py: libswsscommon's producer and consumer tables, timed.
//
//   tables_bench MODE <database_config.json> <address> <table> <keys> [batch]
//
// MODE is one of
//   pst_set       ProducerStateTable::set, one call (one EVALSHA round trip) a key
//   pst_batched   ProducerStateTable::set(vector<KeyOpFieldsValuesTuple>), <batch> keys a call
//   pst_buffered  ProducerStateTable on a RedisPipeline, buffered, flush() every <batch> keys
//   cst_drain     ConsumerStateTable::pops (pop batch <batch>) until the key set is empty
//   ct_drain      ConsumerTable::pops (pop batch <batch>) until the op queue is empty
//
// <address> is host:port (TCP) or a unix socket path (starts with '/'); database id 0, whose
// separator comes from the config. Producers write <keys> entries of 4 fields ("Ethernet<i>":
// alias etp<i>, speed 100000, mtu 9100, admin_status up), the same as the Python side; consumers
// expect <keys> entries that the caller put there before.
//
// Everything that is not timed (config, connections, SCRIPT LOADs, the consumers' SUBSCRIBE, the
// producers' input data) happens first; then the program prints "ready" and waits for one line on
// stdin, so the caller can reset Redis's statistics. It prints one JSON line: "count" (keys set or
// popped), "ns" (monotonic nanoseconds timed) and "calls" (set/flush calls or non-empty pops).
// A producer is timed over its calls only (the buffered one includes its final flush); a consumer
// from the start of the pop that returned the first key to the end of the one that returned the
// last (the empty pop that ends the drain is not timed).
#include <chrono>
#include <deque>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "consumerstatetable.h"
#include "consumertable.h"
#include "dbconnector.h"
#include "producerstatetable.h"
#include "redispipeline.h"

using namespace swss;

static long long now_ns()
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch()).count();
}

static std::vector<FieldValueTuple> fields_of(long long i)
{
    return {
        {"alias", "etp" + std::to_string(i)},
        {"speed", "100000"},
        {"mtu", "9100"},
        {"admin_status", "up"},
    };
}

static void wait_for_go()
{
    std::cout << "ready" << std::endl;
    std::string line;
    std::getline(std::cin, line);
}

static void report(long long count, long long ns, long long calls)
{
    std::cout << "{\"count\": " << count << ", \"ns\": " << ns << ", \"calls\": " << calls << "}" << std::endl;
}

template <typename Consumer>
static int drain(Consumer &table, long long want)
{
    wait_for_go();
    std::deque<KeyOpFieldsValuesTuple> batch;
    long long got = 0, first = 0, last = 0, pops = 0;
    for (;;)
    {
        long long start = now_ns();
        table.pops(batch);
        long long end = now_ns();
        if (batch.empty())
        {
            break;
        }
        if (first == 0)
        {
            first = start;
        }
        last = end;
        got += batch.size();
        pops++;
    }
    report(got, last - first, pops);
    if (got != want)
    {
        std::cerr << "popped " << got << " keys, expected " << want << std::endl;
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 6 && argc != 7)
    {
        std::cerr << "usage: tables_bench pst_set|pst_batched|pst_buffered|cst_drain|ct_drain "
                     "CONFIG ADDRESS TABLE KEYS [BATCH]" << std::endl;
        return 2;
    }
    std::string mode = argv[1];
    SonicDBConfig::initialize(argv[2]);
    std::string address = argv[3];
    std::string table = argv[4];
    long long keys = std::stoll(argv[5]);
    int batch = argc == 7 ? std::stoi(argv[6]) : 128;

    // Timeout 0: blocking calls, as the daemons' connectors in SONiC use.
    std::unique_ptr<DBConnector> connector;
    if (!address.empty() && address[0] == '/')
    {
        connector.reset(new DBConnector(0, address, 0));
    }
    else
    {
        auto colon = address.rfind(':');
        connector.reset(new DBConnector(0, address.substr(0, colon), std::stoi(address.substr(colon + 1)), 0));
    }
    DBConnector *db = connector.get();

    if (mode == "cst_drain")
    {
        ConsumerStateTable cst(db, table, batch);
        return drain(cst, keys);
    }
    if (mode == "ct_drain")
    {
        ConsumerTable ct(db, table, batch);
        return drain(ct, keys);
    }

    std::vector<std::string> names;
    std::vector<std::vector<FieldValueTuple>> values;
    names.reserve(keys);
    values.reserve(keys);
    for (long long i = 0; i < keys; i++)
    {
        names.push_back("Ethernet" + std::to_string(i));
        values.push_back(fields_of(i));
    }

    long long calls = 0, start = 0, end = 0;
    if (mode == "pst_set")
    {
        ProducerStateTable pst(db, table);  // its own pipeline of 1: one round trip a set
        wait_for_go();
        start = now_ns();
        for (long long i = 0; i < keys; i++)
        {
            pst.set(names[i], values[i]);
        }
        end = now_ns();
        calls = keys;
    }
    else if (mode == "pst_batched")
    {
        // The input in the form the call takes, built before the clock starts.
        std::vector<std::vector<KeyOpFieldsValuesTuple>> chunks;
        for (long long i = 0; i < keys; i += batch)
        {
            std::vector<KeyOpFieldsValuesTuple> chunk;
            for (long long j = i; j < keys && j < i + batch; j++)
            {
                chunk.emplace_back(names[j], SET_COMMAND, values[j]);
            }
            chunks.push_back(std::move(chunk));
        }
        ProducerStateTable pst(db, table);
        wait_for_go();
        start = now_ns();
        for (const auto &chunk : chunks)
        {
            pst.set(chunk);
        }
        end = now_ns();
        calls = chunks.size();
    }
    else if (mode == "pst_buffered")
    {
        // A pipeline of <batch> commands also flushes by itself when full, so the explicit
        // flush every <batch> keys finds it just flushed; the last one sends the remainder.
        RedisPipeline pipeline(db, batch);
        ProducerStateTable pst(&pipeline, table, true);
        wait_for_go();
        start = now_ns();
        for (long long i = 0; i < keys; i++)
        {
            pst.set(names[i], values[i]);
            if ((i + 1) % batch == 0)
            {
                pst.flush();
                calls++;
            }
        }
        pst.flush();
        end = now_ns();
        calls++;
    }
    else
    {
        std::cerr << "unknown mode " << mode << std::endl;
        return 2;
    }
    report(keys, end - start, calls);
    return 0;
}
