-- wrk's side of `npm run bench`: one script for every workload.
-- Arguments: workload (create | replay | get | list), token, first id, seeded plants.
local workload, token, nextId, seeded
local headers

function init (args)
  workload = args[1]
  token = args[2]
  nextId = tonumber(args[3])
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
