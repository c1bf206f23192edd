-- swssd's daemon variant of consumer_table_pops.lua: every operation it delivers is returned and
-- applied to Redis as the C++ script does, plus what a daemon needs so that no popped change is lost:
-- * the fields of a SET go to the table in one HSET (the same hash as the C++ script's HSET per field);
-- * each triple is checked before anything is done with it (the op an S or D prefix and a command
--   the C++ script knows, the value a JSON array of an even number of strings); a bad one costs
--   that entry, not the batch: it is set aside (a JSON record on the dead-letter list KEYS[4],
--   capped at ARGV[3]) and everything valid around it is delivered. A stray element that shifted
--   the triples (one pushed alone) is set aside on its own, so the triples after it line up again;
-- * the delivered batch is added to the in-flight hash KEYS[3] under a new sequence number (from
--   HINCRBY of its field 'seq'), in this same call, so a crashed daemon or a lost reply loses nothing;
-- * a wrong-type queue is refused before anything is popped.
-- KEYS: op queue, table name (with prefix), in-flight hash, dead-letter list
-- ARGV: pop batch size, modify redis (1/0), dead-letter list cap, excerpt bytes
-- Reply: {seq, more, operations, set aside}: seq of this batch (the counter when nothing was
-- delivered), 1 when the queue holds more, the operations as consumer_table_pops.lua returns
-- them but as the JSON text kept in the record (Redis encodes the batch once, not twice; an
-- empty array when none were delivered), the records set aside.
local expected = {{KEYS[1], 'list'}, {KEYS[3], 'hash'}, {KEYS[4], 'list'}}
for _, e in ipairs(expected) do
   local t = redis.call('TYPE', e[1])['ok']
   if t ~= 'none' and t ~= e[2] then
      return redis.error_reply('WRONGTYPE ' .. e[1] .. ' is a ' .. t .. ', not a ' .. e[2])
   end
end
-- 1: writes the table, 2: bulk (writes ASIC_STATE-style keys), 0: leaves Redis alone
local known = {
   set = 1, SET = 1, create = 1, remove = 1, DEL = 1,
   bulkset = 2, bulkcreate = 2, bulkremove = 2,
   flush = 0, flushresponse = 0, get = 0, bulkget = 0, getresponse = 0, notify = 0,
   get_stats = 0, clear_stats = 0, attribute_capability_query = 0, attribute_capability_response = 0,
   attr_enum_values_capability_query = 0, attr_enum_values_capability_response = 0,
   object_type_get_availability_query = 0, object_type_get_availability_response = 0,
   stats_capability_query = 0, stats_capability_response = 0, stats_st_capability_query = 0,
   stats_st_capability_response = 0, link_event_damping_config_set = 0,
}
local modify = ARGV[2] ~= "0"
local limit = tonumber(ARGV[4])

-- The op's name and the reply entry {key, name, field, value, ...} of a valid triple (three
-- elements of the queue), else nil and why.
local function check(op, value, key)
   local dbop = op:sub(1, 1)
   if dbop ~= 'S' and dbop ~= 'D' then
      return nil, 'op does not start with S or D'
   end
   local name = op:sub(2)
   local kind = known[name]
   if kind == nil then
      return nil, 'unsupported operation command: ' .. name
   end
   local ok, jj = pcall(cjson.decode, value)
   if not ok or type(jj) ~= 'table' then
      return nil, 'value is not a JSON array'
   end
   local size = #jj
   if size % 2 ~= 0 then
      return nil, 'value is not an even-length JSON array of strings'
   end
   local ret = {key, name}
   for idx = 1, size do
      local v = jj[idx]
      if type(v) ~= 'string' then
         return nil, 'value is not an even-length JSON array of strings'
      end
      ret[idx + 2] = v
   end
   if kind == 2 and modify then
      if not string.find(key, ':', 1, true) then
         return nil, 'bulk key without an object type'
      end
      if name ~= 'bulkremove' then
         for idx = 4, size + 2, 2 do
            for part in string.gmatch(ret[idx], '([^|]+)') do
               if not string.find(part, '=', 1, true) then
                  return nil, 'bulk attribute without ='
               end
            end
         end
      end
   end
   return name, ret
end

-- Applies one checked operation as consumer_table_pops.lua does; false when a target is not a hash.
local function apply(dbop, op, key, ret)
   if not modify then
      return true
   end
   if op == 'bulkset' or op == 'bulkcreate' or op == 'bulkremove' then
      key = key:sub(1, string.find(key, ':') - 1)
      local len = #ret
      local st = 3
      while st <= len do
         local keyname = KEYS[2] .. ':' .. key .. ':' .. ret[st]
         if op == 'bulkremove' then
            redis.call('DEL', keyname)
         else
            for value in string.gmatch(ret[st+1], '([^|]+)') do
               local attr = value:sub(1, string.find(value, '=') - 1)
               local val = value.sub(value, string.find(value, '=') + 1)
               local r = redis.pcall('HSET', keyname, attr, val)
               if type(r) == 'table' and r['err'] then
                  return false
               end
            end
         end
         st = st + 2
      end
   elseif known[op] == 1 then
      local keyname = KEYS[2] .. ':' .. key
      if key == '' then
         keyname = KEYS[2]
      end
      if dbop == 'D' then
         redis.call('DEL', keyname)
      else
         -- one HSET of every field (in chunks: unpack() has a stack limit): the same hash as one
         -- HSET per field
         for st = 3, #ret, 1000 do
            local r = redis.pcall('HSET', keyname, unpack(ret, st, math.min(st + 999, #ret)))
            if type(r) == 'table' and r['err'] then
               return false
            end
         end
      end
   end
   return true
end

local rets = {}
local dead = {}
local function set_aside(key, op, value, reason)
   table.insert(dead, cjson.encode({key = key or '', op = op or '', value = string.sub(value or '', 1, limit),
      reason = reason}))
end

local want = tonumber(ARGV[1])
local len = redis.call('LLEN', KEYS[1])
local window = math.min(len, want * 3 + 2)
local items = {}
if window > 0 then
   items = redis.call('LRANGE', KEYS[1], -window, -1)
end
local i = #items
local taken = 0
while taken < want and i >= 1 do
   if i < 3 then
      if window == len then
         -- the head of the queue: producers push whole triples, so this is a stray
         for j = i, 1, -1 do
            set_aside('', '', items[j], 'stray element')
         end
         i = 0
      end
      break
   end
   local op, value, key = items[i-2], items[i-1], items[i]
   local name, ret = check(op, value, key)
   if name then
      if apply(op:sub(1, 1), name, key, ret) then
         table.insert(rets, ret)
      else
         set_aside(key, op, value, KEYS[2] .. ':' .. key .. ' is not a hash')
      end
      i = i - 3
      taken = taken + 1
   elseif i < 5 and window < len then
      break -- cannot tell a shifted triple from a bad one at the window's edge: next pop
   elseif i >= 4 and check(items[i-3], items[i-2], items[i-1]) then
      set_aside('', '', key, 'stray element')
      i = i - 1
   elseif i >= 5 and check(items[i-4], items[i-3], items[i-2]) then
      set_aside('', '', key, 'stray element')
      set_aside('', '', value, 'stray element')
      i = i - 2
   else
      set_aside(key, op, value, ret)
      i = i - 3
      taken = taken + 1
   end
end
local consumed = #items - i
if consumed > 0 then
   redis.call('LTRIM', KEYS[1], 0, -consumed - 1)
end
local seq
local entries = {}
if #rets > 0 then
   seq = redis.call('HINCRBY', KEYS[3], 'seq', 1)
   entries = cjson.encode(rets)
   redis.call('HSET', KEYS[3], seq, entries)
else
   seq = tonumber(redis.call('HGET', KEYS[3], 'seq') or '0')
end
if #dead > 0 then
   for j = 1, #dead, 1000 do -- in chunks: unpack() has a stack limit (8000 set aside failed the pop)
      redis.call('RPUSH', KEYS[4], unpack(dead, j, math.min(j + 999, #dead)))
   end
   redis.call('LTRIM', KEYS[4], -tonumber(ARGV[3]), -1)
end
local more = 0
if len > consumed then
   more = 1
end
return {seq, more, entries, dead}
