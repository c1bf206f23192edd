-- swssd's own variant of consumer_state_table_pops.lua: the same changes to Redis, and each
-- popped entry also says whether a delete was pending for it (1) or not (0). That lets a
-- consumer report "DEL then SET" exactly where the C++ script returns a bare SET.
redis.replicate_commands()
local ret = {}
local tablename = KEYS[2]
local stateprefix = ARGV[2]
local keys = redis.call('SPOP', KEYS[1], ARGV[1])
local n = table.getn(keys)
for i = 1, n do
   local key = keys[i]
   local num = redis.call('SREM', KEYS[3], key)
   if num == 1 then
      redis.call('DEL', tablename..key)
   end
   local fieldvalues = redis.call('HGETALL', stateprefix..tablename..key)
   table.insert(ret, {key, fieldvalues, num})
   for i = 1, #fieldvalues, 2 do
      redis.call('HSET', tablename..key, fieldvalues[i], fieldvalues[i + 1])
   end
   redis.call('DEL', stateprefix..tablename..key)
end
return ret
