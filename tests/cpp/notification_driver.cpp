// The C++ side of tests/test_notification_interop.py: libswsscommon's NotificationProducer and
// NotificationConsumer, driven through stdin/stdout as JSON lines.
//
//   notification_driver send <unix socket> <db id> <channel>
//       reads lines [op, data, [[field, value], ...]] from stdin, sends each with
//       NotificationProducer::send and prints what send returned (subscribers), one per line
//   notification_driver receive <unix socket> <db id> <channel> <count> <pop batch size>
//       subscribes (NotificationConsumer), prints "subscribed", then prints every notification
//       popped through Select + pops() as [op, data, [[field, value], ...]] until <count> came;
//       exits 2 when nothing arrives for 10 seconds
//   notification_driver receive-each <unix socket> <db id> <channel> <count>
//       the same with pop(), one at a time: a message pop() throws on prints {"error": what}
#include <deque>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dbconnector.h"
#include "notificationconsumer.h"
#include "notificationproducer.h"
#include "select.h"

using nlohmann::json;

static json asJson(const std::string &op, const std::string &data, const std::vector<swss::FieldValueTuple> &values)
{
    json fvs = json::array();
    for (const auto &fv : values)
    {
        fvs.push_back(json::array({fvField(fv), fvValue(fv)}));
    }
    return json::array({op, data, fvs});
}

static int sendAll(swss::DBConnector &db, const std::string &channel)
{
    swss::NotificationProducer producer(&db, channel);
    std::string line;
    while (std::getline(std::cin, line))
    {
        json item = json::parse(line);
        std::vector<swss::FieldValueTuple> values;
        for (const auto &fv : item.at(2))
        {
            values.emplace_back(fv.at(0).get<std::string>(), fv.at(1).get<std::string>());
        }
        std::cout << producer.send(item.at(0).get<std::string>(), item.at(1).get<std::string>(), values) << std::endl;
    }
    return 0;
}

// Prints what one pop() gives, or what it threw; 1 either way (pop takes the message off first).
static size_t popOne(swss::NotificationConsumer &consumer)
{
    std::string op;
    std::string data;
    std::vector<swss::FieldValueTuple> values;
    try
    {
        consumer.pop(op, data, values);
        std::cout << asJson(op, data, values).dump() << std::endl;
    }
    catch (const std::exception &e)
    {
        std::cout << json({{"error", e.what()}}).dump(-1, ' ', false, json::error_handler_t::replace) << std::endl;
    }
    return 1;
}

static int receive(swss::DBConnector &db, const std::string &channel, size_t count, size_t batch, bool each)
{
    swss::NotificationConsumer consumer(&db, channel, 100, batch);
    swss::Select select;
    select.addSelectable(&consumer);
    std::cout << "subscribed" << std::endl;

    size_t received = 0;
    while (received < count)
    {
        swss::Selectable *ready = nullptr;
        if (select.select(&ready, 10000) != swss::Select::OBJECT)
        {
            std::cerr << "timed out after " << received << " notifications" << std::endl;
            return 2;
        }
        if (each)
        {
            while (received < count && consumer.peek() > 0)
            {
                received += popOne(consumer);
            }
            continue;
        }
        std::deque<swss::KeyOpFieldsValuesTuple> batchPopped;
        consumer.pops(batchPopped);
        for (const auto &kco : batchPopped)
        {
            std::cout << asJson(kfvOp(kco), kfvKey(kco), kfvFieldsValues(kco)).dump() << std::endl;
        }
        received += batchPopped.size();
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 5)
    {
        std::cerr << "usage: " << argv[0] << " send|receive|receive-each <unix socket> <db id> <channel> [count [batch]]"
                  << std::endl;
        return 64;
    }
    const std::string mode = argv[1];
    swss::DBConnector db(std::stoi(argv[3]), argv[2], 0);
    if (mode == "send")
    {
        return sendAll(db, argv[4]);
    }
    if (mode == "receive" && argc == 7)
    {
        return receive(db, argv[4], std::stoul(argv[5]), std::stoul(argv[6]), false);
    }
    if (mode == "receive-each" && argc == 6)
    {
        return receive(db, argv[4], std::stoul(argv[5]), swss::DEFAULT_NC_POP_BATCH_SIZE, true);
    }
    std::cerr << "unknown mode or missing arguments: " << mode << std::endl;
    return 64;
}
