-- swssd's own variant of consumer_table_pops.lua (opt-in: fast_scripts=True): the same entries
-- and the same changes to Redis, with each SET entry's fields written by one HSET instead of one
-- HSET per field (the same hash: a field given twice keeps its last value either way).
-- KEYS: op queue, 'prefix + TABLE'    ARGV: pop batch size, modify redis ("0": leave Redis alone)
local rets = {}
local popsize = ARGV[1] * 3
local keys = redis.call('LRANGE', KEYS[1], -popsize, -1)
redis.call('LTRIM', KEYS[1], 0, -popsize - 1)
local modify = ARGV[2] ~= "0"
local plain = {set = true, SET = true, create = true, remove = true, DEL = true}
local passive = {
   flush = true, flushresponse = true, get = true, bulkget = true, getresponse = true, notify = true,
   get_stats = true, clear_stats = true,
   attribute_capability_query = true, attribute_capability_response = true,
   attr_enum_values_capability_query = true, attr_enum_values_capability_response = true,
   object_type_get_availability_query = true, object_type_get_availability_response = true,
   stats_capability_query = true, stats_capability_response = true,
   stats_st_capability_query = true, stats_st_capability_response = true,
   link_event_damping_config_set = true,
}
for i = #keys, 1, -3 do
   local op = keys[i - 2]
   local key = keys[i]
   local dbop = op:sub(1, 1)
   op = op:sub(2)
   local ret = {key, op}
   local jj = cjson.decode(keys[i - 1])
   for idx = 1, #jj do
      ret[idx + 2] = jj[idx]
   end
   rets[#rets + 1] = ret
   if not modify then
      -- leave Redis alone
   elseif op == 'bulkset' or op == 'bulkcreate' or op == 'bulkremove' then
      -- key is "OBJECT_TYPE:num"; each field names an object "KEYS[2]:OBJECT_TYPE:field"
      local objtype = key:sub(1, string.find(key, ':') - 1)
      for st = 3, #ret, 2 do
         local keyname = KEYS[2] .. ':' .. objtype .. ':' .. ret[st]
         if op == 'bulkremove' then
            redis.call('DEL', keyname)
         else
            -- the value is a=v|a=v|...
            for value in string.gmatch(ret[st + 1], '([^|]+)') do
               local eq = string.find(value, '=')
               redis.call('HSET', keyname, value:sub(1, eq - 1), value:sub(eq + 1))
            end
         end
      end
   elseif plain[op] then
      local keyname = KEYS[2] .. ':' .. key
      if key == '' then
         keyname = KEYS[2]
      end
      if dbop == 'D' then
         redis.call('DEL', keyname)
      else
         for j = 3, #ret, 1000 do -- in chunks: unpack() has a stack limit
            redis.call('HSET', keyname, unpack(ret, j, math.min(j + 999, #ret)))
         end
      end
   elseif not passive[op] then
      error("unsupported operation command: " .. op .. ", FIXME")
   end
end
return rets
