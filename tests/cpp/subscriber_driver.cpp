// The C++ side of tests/test_subscriber_interop.py: libswsscommon's Table as a writer and its
// SubscriberStateTable as a consumer, driven through stdin/stdout as JSON lines.
//
//   subscriber_driver write <database_config.json> <db name> <table>
//       reads lines ["set", key, [[f, v], ...]] | ["hset", key, f, v] | ["hdel", key, f] |
//       ["del", key] from stdin and applies each with swss::Table; prints "done"
//   subscriber_driver consume <database_config.json> <db name> <table> <quiet ms>
//       constructs a SubscriberStateTable (pop batch 128), prints "ready", then prints every
//       popped change as [key, op, [[f, v], ...]] until nothing arrived for <quiet ms>
#include <deque>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dbconnector.h"
#include "select.h"
#include "subscriberstatetable.h"
#include "table.h"

using nlohmann::json;

static int write(swss::DBConnector &db, const std::string &name)
{
    swss::Table table(&db, name);
    std::string line;
    while (std::getline(std::cin, line))
    {
        json op = json::parse(line);
        std::string kind = op[0];
        std::string key = op[1];
        if (kind == "set")
        {
            std::vector<swss::FieldValueTuple> fvs;
            for (const auto &fv : op[2])
            {
                fvs.emplace_back(fv[0].get<std::string>(), fv[1].get<std::string>());
            }
            table.set(key, fvs);
        }
        else if (kind == "hset")
        {
            table.hset(key, op[2].get<std::string>(), op[3].get<std::string>());
        }
        else if (kind == "hdel")
        {
            table.hdel(key, op[2].get<std::string>());
        }
        else if (kind == "del")
        {
            table.del(key);
        }
        else
        {
            std::cerr << "unknown op " << kind << std::endl;
            return 2;
        }
    }
    std::cout << "done" << std::endl;
    return 0;
}

static int consume(swss::DBConnector &db, const std::string &name, int quietMs)
{
    swss::SubscriberStateTable sst(&db, name, 128, 0);
    swss::Select sel;
    sel.addSelectable(&sst);
    std::cout << "ready" << std::endl;
    std::deque<swss::KeyOpFieldsValuesTuple> batch;
    while (true)
    {
        swss::Selectable *ready = nullptr;
        int rc = sel.select(&ready, quietMs);
        if (rc == swss::Select::TIMEOUT)
        {
            return 0;
        }
        if (rc != swss::Select::OBJECT)
        {
            std::cerr << "select returned " << rc << std::endl;
            return 1;
        }
        sst.pops(batch);
        for (const auto &kco : batch)
        {
            json fvs = json::array();
            for (const auto &fv : kfvFieldsValues(kco))
            {
                fvs.push_back(json::array({fvField(fv), fvValue(fv)}));
            }
            std::cout << json::array({kfvKey(kco), kfvOp(kco), fvs}).dump() << "\n";
        }
        std::cout.flush();
    }
}

int main(int argc, char **argv)
{
    if (argc < 5)
    {
        std::cerr << "usage: subscriber_driver write|consume CONFIG DB TABLE [QUIET_MS]" << std::endl;
        return 2;
    }
    std::string mode = argv[1];
    swss::SonicDBConfig::initialize(argv[2]);
    swss::DBConnector db(argv[3], 0);
    if (mode == "write")
    {
        return write(db, argv[4]);
    }
    if (mode == "consume" && argc == 6)
    {
        return consume(db, argv[4], std::stoi(argv[5]));
    }
    std::cerr << "bad arguments" << std::endl;
    return 2;
}
