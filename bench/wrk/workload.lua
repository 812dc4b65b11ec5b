-- wrk's side of `npm run bench`: one script for every workload.
-- Arguments: workload (create | replay | get | list), token, first id,
-- seeded plants, id stride. Each thread makes ids of its own, from the
-- first id plus its index times the stride.
local workload, token, nextId, seeded
local headers

local threads = 0
function setup (thread)
  thread:set("index", threads)
  threads = threads + 1
end

function init (args)
  workload = args[1]
  token = args[2]
  nextId = tonumber(args[3]) + index * tonumber(args[5] or 0)
  seeded = tonumber(args[4])
  headers = { ["Authorization"] = "Bearer " .. token, ["Content-Type"] = "application/json" }
end

function request ()
  if workload == "create" then
    nextId = nextId + 1
    return wrk.format("POST", "/plants", headers, '{"id":' .. string.format("%d", nextId) .. ',"name":"Fern","tag":"green"}')
  elseif workload == "replay" then
    return wrk.format("POST", "/plants", headers, '{"id":1,"name":"seed-1"}')
  elseif workload == "get" then
    return wrk.format("GET", "/plants/" .. math.random(1, seeded), headers)
  else
    return wrk.format("GET", "/plants?limit=100", headers)
  end
end
