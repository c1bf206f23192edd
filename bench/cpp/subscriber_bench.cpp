// The C++ side of bench/bench_subscriber.py: libswsscommon's SubscriberStateTable under Select.
//
//   subscriber_bench stream  <database_config.json> <db name> <table> <changes>
//   subscriber_bench startup <database_config.json> <db name> <table> <entries>
//
// stream: constructs the table (PSUBSCRIBE + initial read of an empty table), prints "ready",
// then selects and pops until <changes> changes arrived; startup: times the constructor, which
// reads every existing entry, plus the pops that hand them over. Prints one JSON line with
// monotonic nanoseconds: the start of the pop that returned the first change and the end of the
// one that returned the last (stream), or the constructor's start and the last pop's end.
#include <chrono>
#include <deque>
#include <iostream>
#include <string>

#include "dbconnector.h"
#include "select.h"
#include "subscriberstatetable.h"

using namespace swss;

static long long now_ns()
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch()).count();
}

int main(int argc, char **argv)
{
    if (argc != 6)
    {
        std::cerr << "usage: subscriber_bench stream|startup CONFIG DB TABLE COUNT" << std::endl;
        return 2;
    }
    std::string mode = argv[1];
    SonicDBConfig::initialize(argv[2]);
    DBConnector db(argv[3], 0);
    std::string table = argv[4];
    long long want = std::stoll(argv[5]);

    long long constructed_at = now_ns();
    SubscriberStateTable sst(&db, table, 128, 0);
    Select sel;
    sel.addSelectable(&sst);
    if (mode == "stream")
    {
        std::cout << "ready" << std::endl;
    }

    long long got = 0, first = 0, last = 0;
    std::deque<KeyOpFieldsValuesTuple> batch;
    while (got < want)
    {
        Selectable *ready = nullptr;
        int rc = sel.select(&ready, 60000);
        if (rc != Select::OBJECT)
        {
            std::cerr << "select returned " << rc << " after " << got << " changes" << std::endl;
            return 1;
        }
        long long start = now_ns();
        sst.pops(batch);
        long long end = now_ns();
        if (!batch.empty() && first == 0)
        {
            first = start;
        }
        got += batch.size();
        last = end;
    }
    if (mode == "startup")
    {
        first = constructed_at;
    }
    std::cout << "{\"count\": " << got << ", \"first_ns\": " << first << ", \"last_ns\": " << last << "}"
              << std::endl;
    return 0;
}
