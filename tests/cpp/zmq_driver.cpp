// The C++ side of tests/test_zmq_interop.py: libswsscommon's BinarySerializer,
// ZmqProducerStateTable and ZmqConsumerStateTable, driven through stdin/stdout.
//
//   zmq_driver serialize
//       reads lines [db, table, [[key, op, [[f, v], ...]], ...]] and prints, for each, the
//       message BinarySerializer::serializeBuffer writes, in hex
//   zmq_driver produce <database_config.json> <db name> <table> <endpoint> <persist 0|1>
//       reads lines ["send", [[key, op, fvs], ...]] | ["set", key, fvs, op] | ["del", key] |
//       ["set_many", [[key, op, fvs], ...]] | ["del_many", [key, ...]] and applies each with a
//       ZmqProducerStateTable over a ZmqClient; on the line ["wait"] waits for the persistence
//       queue to drain, prints "sent", and then waits for the next line before exiting (the
//       client's linger is 0: leaving earlier could drop messages still queued)
//   zmq_driver consume <database_config.json> <db name> <table> <endpoint> <persist 0|1> <count> <quiet ms>
//       binds a ZmqServer with a ZmqConsumerStateTable (pop batch 128) under swss::Select,
//       prints "ready", then every popped change as [key, op, [[f, v], ...]] until <count>
//       arrived or nothing did for <quiet ms> (select() returning TIMEOUT early does not end
//       it); then waits for persistence and prints "done N"
#include <chrono>
#include <cstdio>
#include <deque>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "binaryserializer.h"
#include "dbconnector.h"
#include "select.h"
#include "zmqclient.h"
#include "zmqconsumerstatetable.h"
#include "zmqproducerstatetable.h"
#include "zmqserver.h"

using nlohmann::json;

static std::vector<swss::FieldValueTuple> fieldsOf(const json &list)
{
    std::vector<swss::FieldValueTuple> fvs;
    for (const auto &fv : list)
    {
        fvs.emplace_back(fv[0].get<std::string>(), fv[1].get<std::string>());
    }
    return fvs;
}

static std::vector<swss::KeyOpFieldsValuesTuple> changesOf(const json &list)
{
    std::vector<swss::KeyOpFieldsValuesTuple> kcos;
    for (const auto &c : list)
    {
        kcos.emplace_back(c[0].get<std::string>(), c[1].get<std::string>(), fieldsOf(c[2]));
    }
    return kcos;
}

static int serialize()
{
    std::vector<char> buffer(MQ_RESPONSE_MAX_COUNT);
    std::string line;
    while (std::getline(std::cin, line))
    {
        json in = json::parse(line);
        auto kcos = changesOf(in[2]);
        size_t n = swss::BinarySerializer::serializeBuffer(
            buffer.data(), buffer.size(), in[0].get<std::string>(), in[1].get<std::string>(), kcos);
        static const char digits[] = "0123456789abcdef";
        std::string hex;
        hex.reserve(n * 2);
        for (size_t i = 0; i < n; i++)
        {
            unsigned char b = (unsigned char)buffer[i];
            hex += digits[b >> 4];
            hex += digits[b & 15];
        }
        std::cout << hex << "\n";
    }
    std::cout.flush();
    return 0;
}

static int produce(swss::DBConnector &db, const std::string &table, const std::string &endpoint, bool persist)
{
    swss::ZmqClient client(endpoint);
    swss::ZmqProducerStateTable p(&db, table, client, persist);
    std::string line;
    while (std::getline(std::cin, line))
    {
        json op = json::parse(line);
        std::string kind = op[0];
        if (kind == "send")
        {
            p.send(changesOf(op[1]));
        }
        else if (kind == "set")
        {
            p.set(op[1].get<std::string>(), fieldsOf(op[2]), op.size() > 3 ? op[3].get<std::string>() : std::string(SET_COMMAND));
        }
        else if (kind == "del")
        {
            p.del(op[1].get<std::string>());
        }
        else if (kind == "set_many")
        {
            p.set(changesOf(op[1]));
        }
        else if (kind == "del_many")
        {
            p.del(op[1].get<std::vector<std::string>>());
        }
        else if (kind == "wait")
        {
            while (persist && p.dbUpdaterQueueSize() > 0)
            {
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
            }
            std::cout << "sent" << std::endl;
            std::getline(std::cin, line);
            return 0;
        }
        else
        {
            std::cerr << "unknown op " << kind << std::endl;
            return 2;
        }
    }
    return 0;
}

static int consume(swss::DBConnector &db, const std::string &table, const std::string &endpoint, bool persist,
                   long count, int quietMs)
{
    swss::ZmqServer server(endpoint);
    swss::ZmqConsumerStateTable c(&db, table, server, 128, 0, persist);
    swss::Select sel;
    sel.addSelectable(&c);
    std::cout << "ready" << std::endl;
    std::deque<swss::KeyOpFieldsValuesTuple> batch;
    long got = 0;
    auto lastSeen = std::chrono::steady_clock::now();
    while (got < count)
    {
        swss::Selectable *ready = nullptr;
        int rc = sel.select(&ready, quietMs);
        if (rc == swss::Select::TIMEOUT && !c.hasData())
        {
            // Select::select also returns TIMEOUT at once when a wake-up's changes were already
            // taken by an earlier pops(): only a quiet period of <quiet ms> ends the loop.
            if (std::chrono::steady_clock::now() - lastSeen >= std::chrono::milliseconds(quietMs))
            {
                break;
            }
            continue;
        }
        if (rc != swss::Select::OBJECT && rc != swss::Select::TIMEOUT)
        {
            std::cerr << "select returned " << rc << std::endl;
            return 1;
        }
        c.pops(batch);
        for (const auto &kco : batch)
        {
            json fvs = json::array();
            for (const auto &fv : kfvFieldsValues(kco))
            {
                fvs.push_back(json::array({fvField(fv), fvValue(fv)}));
            }
            std::cout << json::array({kfvKey(kco), kfvOp(kco), fvs}).dump() << "\n";
            got++;
        }
        if (!batch.empty())
        {
            lastSeen = std::chrono::steady_clock::now();
        }
        batch.clear();
    }
    while (persist && c.dbUpdaterQueueSize() > 0)
    {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::cout << "done " << got << std::endl;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2)
    {
        std::cerr << "usage: zmq_driver serialize | produce CONFIG DB TABLE ENDPOINT PERSIST | "
                     "consume CONFIG DB TABLE ENDPOINT PERSIST COUNT QUIET_MS" << std::endl;
        return 2;
    }
    std::string mode = argv[1];
    if (mode == "serialize")
    {
        return serialize();
    }
    if (argc < 7)
    {
        std::cerr << "bad arguments" << std::endl;
        return 2;
    }
    swss::SonicDBConfig::initialize(argv[2]);
    swss::DBConnector db(argv[3], 0, true);
    bool persist = std::string(argv[6]) == "1";
    if (mode == "produce")
    {
        return produce(db, argv[4], argv[5], persist);
    }
    if (mode == "consume" && argc == 9)
    {
        return consume(db, argv[4], argv[5], persist, std::stol(argv[7]), std::stoi(argv[8]));
    }
    std::cerr << "bad arguments" << std::endl;
    return 2;
}
