// @ts-nocheck
// Generated from spec/plant-store.yaml, as lib/serialization.ts compiles its
// answers' schemas, by `npm run generate` (fast-json-stringify's standalone
// code); do not edit.
import helper0 from 'fast-json-stringify/lib/serializer.js'

/** The serializers, by their schema's key (compile-once.ts). */
export const RESPONSE_SERIALIZERS = new Map([
  ["{\"type\":\"object\",\"required\":[\"status\"],\"properties\":{\"status\":{\"description\":\"`ok` when the check passed\",\"type\":\"string\",\"enum\":[\"ok\"]}}}", (() => {
  'use strict'

  const Serializer = helper0
  const serializerState = {"mode":"standalone"}
  const serializer = Serializer.restoreFromState(serializerState)

  const validator = null


  return function anonymous(validator,serializer
) {

    
const {
  asString,
  asNumber,
  asBoolean,
  asDateTime,
  asDate,
  asTime,
  asUnsafeString,
  asPlainStringArray
} = serializer

const asInteger = serializer.asInteger.bind(serializer)


    const JSON_STR_BEGIN_OBJECT = '{'
    const JSON_STR_END_OBJECT = '}'
    const JSON_STR_BEGIN_ARRAY = '['
    const JSON_STR_END_ARRAY = ']'
    const JSON_STR_COMMA = ','
    const JSON_STR_COLONS = ':'
    const JSON_STR_QUOTE = '"'
    const JSON_STR_EMPTY_OBJECT = JSON_STR_BEGIN_OBJECT + JSON_STR_END_OBJECT
    const JSON_STR_EMPTY_ARRAY = JSON_STR_BEGIN_ARRAY + JSON_STR_END_ARRAY
    const JSON_STR_EMPTY_STRING = JSON_STR_QUOTE + JSON_STR_QUOTE
    const JSON_STR_NULL = 'null'
    
  
    
      // "#"
      function anonymous0 (input) {
        const obj = (input && typeof input.toJSON === 'function')
    ? input.toJSON()
    : input
  
        if (obj === null) return JSON_STR_EMPTY_OBJECT
        let json = ''

        
      const value_status_1 = obj["status"]
      if (value_status_1 !== undefined) {
        json += "{\"status\":"
        
        if (typeof value_status_1 !== 'string') {
          if (value_status_1 === null) {
            json += JSON_STR_EMPTY_STRING
          } else if (value_status_1 instanceof Date) {
            json += asDateTime(value_status_1)
          } else if (value_status_1 instanceof RegExp) {
            json += asString(value_status_1.source)
          } else {
            json += asString(value_status_1.toString())
          }
        } else {
          json += asString(value_status_1)
        }
        
      } else {
        throw new Error('"status" is required!')
      }
      
return json + JSON_STR_END_OBJECT

      }
    
    const main = anonymous0
    return main
    
}(validator, serializer)})()],
  ["{\"type\":\"object\",\"required\":[\"error\",\"message\"],\"properties\":{\"error\":{\"description\":\"The HTTP status code of the answer\",\"type\":\"integer\",\"format\":\"int32\",\"minimum\":400,\"maximum\":599},\"message\":{\"description\":\"What went wrong, and how to fix it where the client can\",\"type\":\"string\",\"maxLength\":1024}}}", (() => {
  'use strict'

  const Serializer = helper0
  const serializerState = {"mode":"standalone"}
  const serializer = Serializer.restoreFromState(serializerState)

  const validator = null


  return function anonymous(validator,serializer
) {

    
const {
  asString,
  asNumber,
  asBoolean,
  asDateTime,
  asDate,
  asTime,
  asUnsafeString,
  asPlainStringArray
} = serializer

const asInteger = serializer.asInteger.bind(serializer)


    const JSON_STR_BEGIN_OBJECT = '{'
    const JSON_STR_END_OBJECT = '}'
    const JSON_STR_BEGIN_ARRAY = '['
    const JSON_STR_END_ARRAY = ']'
    const JSON_STR_COMMA = ','
    const JSON_STR_COLONS = ':'
    const JSON_STR_QUOTE = '"'
    const JSON_STR_EMPTY_OBJECT = JSON_STR_BEGIN_OBJECT + JSON_STR_END_OBJECT
    const JSON_STR_EMPTY_ARRAY = JSON_STR_BEGIN_ARRAY + JSON_STR_END_ARRAY
    const JSON_STR_EMPTY_STRING = JSON_STR_QUOTE + JSON_STR_QUOTE
    const JSON_STR_NULL = 'null'
    
  
    
      // "#"
      function anonymous0 (input) {
        const obj = (input && typeof input.toJSON === 'function')
    ? input.toJSON()
    : input
  
        if (obj === null) return JSON_STR_EMPTY_OBJECT
        let json = ''

        
      const value_error_1 = obj["error"]
      if (value_error_1 !== undefined) {
        json += "{\"error\":"
        json += asInteger(value_error_1)
      } else {
        throw new Error('"error" is required!')
      }
      
      const value_message_2 = obj["message"]
      if (value_message_2 !== undefined) {
        json += ",\"message\":"
        
        if (typeof value_message_2 !== 'string') {
          if (value_message_2 === null) {
            json += JSON_STR_EMPTY_STRING
          } else if (value_message_2 instanceof Date) {
            json += asDateTime(value_message_2)
          } else if (value_message_2 instanceof RegExp) {
            json += asString(value_message_2.source)
          } else {
            json += asString(value_message_2.toString())
          }
        } else {
          json += asString(value_message_2)
        }
        
      } else {
        throw new Error('"message" is required!')
      }
      
return json + JSON_STR_END_OBJECT

      }
    
    const main = anonymous0
    return main
    
}(validator, serializer)})()],
  ["{\"type\":\"string\",\"maxLength\":16777216}", (() => {
  'use strict'

  const Serializer = helper0
  const serializerState = {"mode":"standalone"}
  const serializer = Serializer.restoreFromState(serializerState)

  const validator = null


  return function anonymous(validator,serializer
) {

    
const {
  asString,
  asNumber,
  asBoolean,
  asDateTime,
  asDate,
  asTime,
  asUnsafeString,
  asPlainStringArray
} = serializer

const asInteger = serializer.asInteger.bind(serializer)


    const JSON_STR_BEGIN_OBJECT = '{'
    const JSON_STR_END_OBJECT = '}'
    const JSON_STR_BEGIN_ARRAY = '['
    const JSON_STR_END_ARRAY = ']'
    const JSON_STR_COMMA = ','
    const JSON_STR_COLONS = ':'
    const JSON_STR_QUOTE = '"'
    const JSON_STR_EMPTY_OBJECT = JSON_STR_BEGIN_OBJECT + JSON_STR_END_OBJECT
    const JSON_STR_EMPTY_ARRAY = JSON_STR_BEGIN_ARRAY + JSON_STR_END_ARRAY
    const JSON_STR_EMPTY_STRING = JSON_STR_QUOTE + JSON_STR_QUOTE
    const JSON_STR_NULL = 'null'
    
  
    function main (input) {
      let json = ''
      
        if (typeof input !== 'string') {
          if (input === null) {
            json += JSON_STR_EMPTY_STRING
          } else if (input instanceof Date) {
            json += asDateTime(input)
          } else if (input instanceof RegExp) {
            json += asString(input.source)
          } else {
            json += asString(input.toString())
          }
        } else {
          json += asString(input)
        }
        
      return json
    }
    
    return main
    
}(validator, serializer)})()],
  ["{\"type\":\"array\",\"maxItems\":1000,\"items\":{\"description\":\"A plant as stored, with its id\",\"allOf\":[{\"allOf\":[{\"type\":\"object\",\"required\":[\"name\"],\"properties\":{\"name\":{\"description\":\"The name of the plant\",\"type\":\"string\",\"maxLength\":256},\"tag\":{\"description\":\"Tag that specifies the type of the plant\",\"type\":\"string\",\"maxLength\":64}}},{\"type\":\"object\",\"required\":[\"id\"],\"properties\":{\"id\":{\"description\":\"Identification number of the plant: a signed 64-bit integer, every digit kept. Values past 2^53 (9007199254740993) are changed by JavaScript's JSON.parse, and by clients generated from this spec that read int64 as a number (@hey-api/openapi-ts and orval type it `number`): use plant-store/client, or read answers with a JSON parser that keeps big integers (lossless-json, json-bigint).\",\"type\":\"integer\",\"format\":\"int64\"}}}]}]}}", (() => {
  'use strict'

  const Serializer = helper0
  const serializerState = {"mode":"standalone"}
  const serializer = Serializer.restoreFromState(serializerState)

  const validator = null


  return function anonymous(validator,serializer
) {

    
const {
  asString,
  asNumber,
  asBoolean,
  asDateTime,
  asDate,
  asTime,
  asUnsafeString,
  asPlainStringArray
} = serializer

const asInteger = serializer.asInteger.bind(serializer)


    const JSON_STR_BEGIN_OBJECT = '{'
    const JSON_STR_END_OBJECT = '}'
    const JSON_STR_BEGIN_ARRAY = '['
    const JSON_STR_END_ARRAY = ']'
    const JSON_STR_COMMA = ','
    const JSON_STR_COLONS = ':'
    const JSON_STR_QUOTE = '"'
    const JSON_STR_EMPTY_OBJECT = JSON_STR_BEGIN_OBJECT + JSON_STR_END_OBJECT
    const JSON_STR_EMPTY_ARRAY = JSON_STR_BEGIN_ARRAY + JSON_STR_END_ARRAY
    const JSON_STR_EMPTY_STRING = JSON_STR_QUOTE + JSON_STR_QUOTE
    const JSON_STR_NULL = 'null'
    
  
    
      // "__fjs_merged_5#"
      function anonymous1 (input) {
        const obj = (input && typeof input.toJSON === 'function')
    ? input.toJSON()
    : input
  
        if (obj === null) return JSON_STR_EMPTY_OBJECT
        let json = ''

        
      const value_name_1 = obj["name"]
      if (value_name_1 !== undefined) {
        json += "{\"name\":"
        
        if (typeof value_name_1 !== 'string') {
          if (value_name_1 === null) {
            json += JSON_STR_EMPTY_STRING
          } else if (value_name_1 instanceof Date) {
            json += asDateTime(value_name_1)
          } else if (value_name_1 instanceof RegExp) {
            json += asString(value_name_1.source)
          } else {
            json += asString(value_name_1.toString())
          }
        } else {
          json += asString(value_name_1)
        }
        
      } else {
        throw new Error('"name" is required!')
      }
      
      const value_id_2 = obj["id"]
      if (value_id_2 !== undefined) {
        json += ",\"id\":"
        json += asInteger(value_id_2)
      } else {
        throw new Error('"id" is required!')
      }
      
      const value_tag_3 = obj["tag"]
      if (value_tag_3 !== undefined) {
        json += ",\"tag\":"
        
        if (typeof value_tag_3 !== 'string') {
          if (value_tag_3 === null) {
            json += JSON_STR_EMPTY_STRING
          } else if (value_tag_3 instanceof Date) {
            json += asDateTime(value_tag_3)
          } else if (value_tag_3 instanceof RegExp) {
            json += asString(value_tag_3.source)
          } else {
            json += asString(value_tag_3.toString())
          }
        } else {
          json += asString(value_tag_3)
        }
        
      }

return json + JSON_STR_END_OBJECT

      }
    

    function anonymous0 (obj) {
      // "#"
      let json = ''
  
    if (obj === null) return JSON_STR_EMPTY_ARRAY
    if (!Array.isArray(obj)) {
      throw new TypeError("The value of '#' does not match schema definition.")
    }
    const arrayLength = obj.length
  
    json += JSON_STR_BEGIN_ARRAY
  
      if (arrayLength > 0) {
        const value = obj[0]
        json += anonymous1(value)
        for (let i = 1; i < arrayLength; i++) {
          json += JSON_STR_COMMA
          const value = obj[i]
          json += anonymous1(value)
        }
      }
      return json + JSON_STR_END_ARRAY
    }
    const main = anonymous0
    return main
    
}(validator, serializer)})()],
  ["{\"type\":\"object\",\"required\":[\"name\"],\"properties\":{\"name\":{\"description\":\"The name of the plant\",\"type\":\"string\",\"maxLength\":256},\"tag\":{\"description\":\"Tag that specifies the type of the plant\",\"type\":\"string\",\"maxLength\":64}}}", (() => {
  'use strict'

  const Serializer = helper0
  const serializerState = {"mode":"standalone"}
  const serializer = Serializer.restoreFromState(serializerState)

  const validator = null


  return function anonymous(validator,serializer
) {

    
const {
  asString,
  asNumber,
  asBoolean,
  asDateTime,
  asDate,
  asTime,
  asUnsafeString,
  asPlainStringArray
} = serializer

const asInteger = serializer.asInteger.bind(serializer)


    const JSON_STR_BEGIN_OBJECT = '{'
    const JSON_STR_END_OBJECT = '}'
    const JSON_STR_BEGIN_ARRAY = '['
    const JSON_STR_END_ARRAY = ']'
    const JSON_STR_COMMA = ','
    const JSON_STR_COLONS = ':'
    const JSON_STR_QUOTE = '"'
    const JSON_STR_EMPTY_OBJECT = JSON_STR_BEGIN_OBJECT + JSON_STR_END_OBJECT
    const JSON_STR_EMPTY_ARRAY = JSON_STR_BEGIN_ARRAY + JSON_STR_END_ARRAY
    const JSON_STR_EMPTY_STRING = JSON_STR_QUOTE + JSON_STR_QUOTE
    const JSON_STR_NULL = 'null'
    
  
    
      // "#"
      function anonymous0 (input) {
        const obj = (input && typeof input.toJSON === 'function')
    ? input.toJSON()
    : input
  
        if (obj === null) return JSON_STR_EMPTY_OBJECT
        let json = ''

        
      const value_name_1 = obj["name"]
      if (value_name_1 !== undefined) {
        json += "{\"name\":"
        
        if (typeof value_name_1 !== 'string') {
          if (value_name_1 === null) {
            json += JSON_STR_EMPTY_STRING
          } else if (value_name_1 instanceof Date) {
            json += asDateTime(value_name_1)
          } else if (value_name_1 instanceof RegExp) {
            json += asString(value_name_1.source)
          } else {
            json += asString(value_name_1.toString())
          }
        } else {
          json += asString(value_name_1)
        }
        
      } else {
        throw new Error('"name" is required!')
      }
      
      const value_tag_2 = obj["tag"]
      if (value_tag_2 !== undefined) {
        json += ",\"tag\":"
        
        if (typeof value_tag_2 !== 'string') {
          if (value_tag_2 === null) {
            json += JSON_STR_EMPTY_STRING
          } else if (value_tag_2 instanceof Date) {
            json += asDateTime(value_tag_2)
          } else if (value_tag_2 instanceof RegExp) {
            json += asString(value_tag_2.source)
          } else {
            json += asString(value_tag_2.toString())
          }
        } else {
          json += asString(value_tag_2)
        }
        
      }

return json + JSON_STR_END_OBJECT

      }
    
    const main = anonymous0
    return main
    
}(validator, serializer)})()],
  ["{\"description\":\"A plant as stored, with its id\",\"allOf\":[{\"allOf\":[{\"type\":\"object\",\"required\":[\"name\"],\"properties\":{\"name\":{\"description\":\"The name of the plant\",\"type\":\"string\",\"maxLength\":256},\"tag\":{\"description\":\"Tag that specifies the type of the plant\",\"type\":\"string\",\"maxLength\":64}}},{\"type\":\"object\",\"required\":[\"id\"],\"properties\":{\"id\":{\"description\":\"Identification number of the plant: a signed 64-bit integer, every digit kept. Values past 2^53 (9007199254740993) are changed by JavaScript's JSON.parse, and by clients generated from this spec that read int64 as a number (@hey-api/openapi-ts and orval type it `number`): use plant-store/client, or read answers with a JSON parser that keeps big integers (lossless-json, json-bigint).\",\"type\":\"integer\",\"format\":\"int64\"}}}]}]}", (() => {
  'use strict'

  const Serializer = helper0
  const serializerState = {"mode":"standalone"}
  const serializer = Serializer.restoreFromState(serializerState)

  const validator = null


  return function anonymous(validator,serializer
) {

    
const {
  asString,
  asNumber,
  asBoolean,
  asDateTime,
  asDate,
  asTime,
  asUnsafeString,
  asPlainStringArray
} = serializer

const asInteger = serializer.asInteger.bind(serializer)


    const JSON_STR_BEGIN_OBJECT = '{'
    const JSON_STR_END_OBJECT = '}'
    const JSON_STR_BEGIN_ARRAY = '['
    const JSON_STR_END_ARRAY = ']'
    const JSON_STR_COMMA = ','
    const JSON_STR_COLONS = ':'
    const JSON_STR_QUOTE = '"'
    const JSON_STR_EMPTY_OBJECT = JSON_STR_BEGIN_OBJECT + JSON_STR_END_OBJECT
    const JSON_STR_EMPTY_ARRAY = JSON_STR_BEGIN_ARRAY + JSON_STR_END_ARRAY
    const JSON_STR_EMPTY_STRING = JSON_STR_QUOTE + JSON_STR_QUOTE
    const JSON_STR_NULL = 'null'
    
  
    
      // "__fjs_merged_9#"
      function anonymous0 (input) {
        const obj = (input && typeof input.toJSON === 'function')
    ? input.toJSON()
    : input
  
        if (obj === null) return JSON_STR_EMPTY_OBJECT
        let json = ''

        
      const value_name_1 = obj["name"]
      if (value_name_1 !== undefined) {
        json += "{\"name\":"
        
        if (typeof value_name_1 !== 'string') {
          if (value_name_1 === null) {
            json += JSON_STR_EMPTY_STRING
          } else if (value_name_1 instanceof Date) {
            json += asDateTime(value_name_1)
          } else if (value_name_1 instanceof RegExp) {
            json += asString(value_name_1.source)
          } else {
            json += asString(value_name_1.toString())
          }
        } else {
          json += asString(value_name_1)
        }
        
      } else {
        throw new Error('"name" is required!')
      }
      
      const value_id_2 = obj["id"]
      if (value_id_2 !== undefined) {
        json += ",\"id\":"
        json += asInteger(value_id_2)
      } else {
        throw new Error('"id" is required!')
      }
      
      const value_tag_3 = obj["tag"]
      if (value_tag_3 !== undefined) {
        json += ",\"tag\":"
        
        if (typeof value_tag_3 !== 'string') {
          if (value_tag_3 === null) {
            json += JSON_STR_EMPTY_STRING
          } else if (value_tag_3 instanceof Date) {
            json += asDateTime(value_tag_3)
          } else if (value_tag_3 instanceof RegExp) {
            json += asString(value_tag_3.source)
          } else {
            json += asString(value_tag_3.toString())
          }
        } else {
          json += asString(value_tag_3)
        }
        
      }

return json + JSON_STR_END_OBJECT

      }
    
    const main = anonymous0
    return main
    
}(validator, serializer)})()],
  ["{\"type\":\"array\",\"maxItems\":100,\"items\":{\"allOf\":[{\"type\":\"object\",\"required\":[\"url\"],\"properties\":{\"url\":{\"description\":\"Where to POST each event: an http or https URL. By default its host must resolve to public addresses only (not loopback, private or link-local), checked now and at every connection.\",\"type\":\"string\",\"format\":\"uri\",\"pattern\":\"^[hH][tT][tT][pP][sS]?://\",\"maxLength\":2048},\"description\":{\"description\":\"What the subscription is for\",\"type\":\"string\",\"maxLength\":256}}},{\"type\":\"object\",\"required\":[\"id\",\"secret\",\"createdAt\"],\"properties\":{\"id\":{\"description\":\"A subscription's id\",\"type\":\"string\",\"pattern\":\"^sub_[0-9a-f]{32}$\",\"maxLength\":36},\"secret\":{\"description\":\"The Standard Webhooks secret that signs every event: `whsec_` and the base64 of 24 random bytes. Verify `webhook-signature` with it (the `standardwebhooks` package does).\",\"type\":\"string\",\"pattern\":\"^whsec_[A-Za-z0-9+/]{32}$\",\"maxLength\":38},\"createdAt\":{\"description\":\"When it was made\",\"type\":\"string\",\"format\":\"date-time\",\"maxLength\":32}}}]}}", (() => {
  'use strict'

  const Serializer = helper0
  const serializerState = {"mode":"standalone"}
  const serializer = Serializer.restoreFromState(serializerState)

  const validator = null


  return function anonymous(validator,serializer
) {

    
const {
  asString,
  asNumber,
  asBoolean,
  asDateTime,
  asDate,
  asTime,
  asUnsafeString,
  asPlainStringArray
} = serializer

const asInteger = serializer.asInteger.bind(serializer)


    const JSON_STR_BEGIN_OBJECT = '{'
    const JSON_STR_END_OBJECT = '}'
    const JSON_STR_BEGIN_ARRAY = '['
    const JSON_STR_END_ARRAY = ']'
    const JSON_STR_COMMA = ','
    const JSON_STR_COLONS = ':'
    const JSON_STR_QUOTE = '"'
    const JSON_STR_EMPTY_OBJECT = JSON_STR_BEGIN_OBJECT + JSON_STR_END_OBJECT
    const JSON_STR_EMPTY_ARRAY = JSON_STR_BEGIN_ARRAY + JSON_STR_END_ARRAY
    const JSON_STR_EMPTY_STRING = JSON_STR_QUOTE + JSON_STR_QUOTE
    const JSON_STR_NULL = 'null'
    
  
    
      // "__fjs_merged_11#"
      function anonymous1 (input) {
        const obj = (input && typeof input.toJSON === 'function')
    ? input.toJSON()
    : input
  
        if (obj === null) return JSON_STR_EMPTY_OBJECT
        let json = ''

        
      const value_url_1 = obj["url"]
      if (value_url_1 !== undefined) {
        json += "{\"url\":"
        
        if (typeof value_url_1 !== 'string') {
          if (value_url_1 === null) {
            json += JSON_STR_EMPTY_STRING
          } else if (value_url_1 instanceof Date) {
            json += asDateTime(value_url_1)
          } else if (value_url_1 instanceof RegExp) {
            json += asString(value_url_1.source)
          } else {
            json += asString(value_url_1.toString())
          }
        } else {
          json += asString(value_url_1)
        }
        
      } else {
        throw new Error('"url" is required!')
      }
      
      const value_id_2 = obj["id"]
      if (value_id_2 !== undefined) {
        json += ",\"id\":"
        
        if (typeof value_id_2 !== 'string') {
          if (value_id_2 === null) {
            json += JSON_STR_EMPTY_STRING
          } else if (value_id_2 instanceof Date) {
            json += asDateTime(value_id_2)
          } else if (value_id_2 instanceof RegExp) {
            json += asString(value_id_2.source)
          } else {
            json += asString(value_id_2.toString())
          }
        } else {
          json += asString(value_id_2)
        }
        
      } else {
        throw new Error('"id" is required!')
      }
      
      const value_secret_3 = obj["secret"]
      if (value_secret_3 !== undefined) {
        json += ",\"secret\":"
        
        if (typeof value_secret_3 !== 'string') {
          if (value_secret_3 === null) {
            json += JSON_STR_EMPTY_STRING
          } else if (value_secret_3 instanceof Date) {
            json += asDateTime(value_secret_3)
          } else if (value_secret_3 instanceof RegExp) {
            json += asString(value_secret_3.source)
          } else {
            json += asString(value_secret_3.toString())
          }
        } else {
          json += asString(value_secret_3)
        }
        
      } else {
        throw new Error('"secret" is required!')
      }
      
      const value_createdAt_4 = obj["createdAt"]
      if (value_createdAt_4 !== undefined) {
        json += ",\"createdAt\":"
        json += asDateTime(value_createdAt_4)
      } else {
        throw new Error('"createdAt" is required!')
      }
      
      const value_description_5 = obj["description"]
      if (value_description_5 !== undefined) {
        json += ",\"description\":"
        
        if (typeof value_description_5 !== 'string') {
          if (value_description_5 === null) {
            json += JSON_STR_EMPTY_STRING
          } else if (value_description_5 instanceof Date) {
            json += asDateTime(value_description_5)
          } else if (value_description_5 instanceof RegExp) {
            json += asString(value_description_5.source)
          } else {
            json += asString(value_description_5.toString())
          }
        } else {
          json += asString(value_description_5)
        }
        
      }

return json + JSON_STR_END_OBJECT

      }
    

    function anonymous0 (obj) {
      // "#"
      let json = ''
  
    if (obj === null) return JSON_STR_EMPTY_ARRAY
    if (!Array.isArray(obj)) {
      throw new TypeError("The value of '#' does not match schema definition.")
    }
    const arrayLength = obj.length
  
    json += JSON_STR_BEGIN_ARRAY
  
      if (arrayLength > 0) {
        const value = obj[0]
        json += anonymous1(value)
        for (let i = 1; i < arrayLength; i++) {
          json += JSON_STR_COMMA
          const value = obj[i]
          json += anonymous1(value)
        }
      }
      return json + JSON_STR_END_ARRAY
    }
    const main = anonymous0
    return main
    
}(validator, serializer)})()],
  ["{\"allOf\":[{\"type\":\"object\",\"required\":[\"url\"],\"properties\":{\"url\":{\"description\":\"Where to POST each event: an http or https URL. By default its host must resolve to public addresses only (not loopback, private or link-local), checked now and at every connection.\",\"type\":\"string\",\"format\":\"uri\",\"pattern\":\"^[hH][tT][tT][pP][sS]?://\",\"maxLength\":2048},\"description\":{\"description\":\"What the subscription is for\",\"type\":\"string\",\"maxLength\":256}}},{\"type\":\"object\",\"required\":[\"id\",\"secret\",\"createdAt\"],\"properties\":{\"id\":{\"description\":\"A subscription's id\",\"type\":\"string\",\"pattern\":\"^sub_[0-9a-f]{32}$\",\"maxLength\":36},\"secret\":{\"description\":\"The Standard Webhooks secret that signs every event: `whsec_` and the base64 of 24 random bytes. Verify `webhook-signature` with it (the `standardwebhooks` package does).\",\"type\":\"string\",\"pattern\":\"^whsec_[A-Za-z0-9+/]{32}$\",\"maxLength\":38},\"createdAt\":{\"description\":\"When it was made\",\"type\":\"string\",\"format\":\"date-time\",\"maxLength\":32}}}]}", (() => {
  'use strict'

  const Serializer = helper0
  const serializerState = {"mode":"standalone"}
  const serializer = Serializer.restoreFromState(serializerState)

  const validator = null


  return function anonymous(validator,serializer
) {

    
const {
  asString,
  asNumber,
  asBoolean,
  asDateTime,
  asDate,
  asTime,
  asUnsafeString,
  asPlainStringArray
} = serializer

const asInteger = serializer.asInteger.bind(serializer)


    const JSON_STR_BEGIN_OBJECT = '{'
    const JSON_STR_END_OBJECT = '}'
    const JSON_STR_BEGIN_ARRAY = '['
    const JSON_STR_END_ARRAY = ']'
    const JSON_STR_COMMA = ','
    const JSON_STR_COLONS = ':'
    const JSON_STR_QUOTE = '"'
    const JSON_STR_EMPTY_OBJECT = JSON_STR_BEGIN_OBJECT + JSON_STR_END_OBJECT
    const JSON_STR_EMPTY_ARRAY = JSON_STR_BEGIN_ARRAY + JSON_STR_END_ARRAY
    const JSON_STR_EMPTY_STRING = JSON_STR_QUOTE + JSON_STR_QUOTE
    const JSON_STR_NULL = 'null'
    
  
    
      // "__fjs_merged_13#"
      function anonymous0 (input) {
        const obj = (input && typeof input.toJSON === 'function')
    ? input.toJSON()
    : input
  
        if (obj === null) return JSON_STR_EMPTY_OBJECT
        let json = ''

        
      const value_url_1 = obj["url"]
      if (value_url_1 !== undefined) {
        json += "{\"url\":"
        
        if (typeof value_url_1 !== 'string') {
          if (value_url_1 === null) {
            json += JSON_STR_EMPTY_STRING
          } else if (value_url_1 instanceof Date) {
            json += asDateTime(value_url_1)
          } else if (value_url_1 instanceof RegExp) {
            json += asString(value_url_1.source)
          } else {
            json += asString(value_url_1.toString())
          }
        } else {
          json += asString(value_url_1)
        }
        
      } else {
        throw new Error('"url" is required!')
      }
      
      const value_id_2 = obj["id"]
      if (value_id_2 !== undefined) {
        json += ",\"id\":"
        
        if (typeof value_id_2 !== 'string') {
          if (value_id_2 === null) {
            json += JSON_STR_EMPTY_STRING
          } else if (value_id_2 instanceof Date) {
            json += asDateTime(value_id_2)
          } else if (value_id_2 instanceof RegExp) {
            json += asString(value_id_2.source)
          } else {
            json += asString(value_id_2.toString())
          }
        } else {
          json += asString(value_id_2)
        }
        
      } else {
        throw new Error('"id" is required!')
      }
      
      const value_secret_3 = obj["secret"]
      if (value_secret_3 !== undefined) {
        json += ",\"secret\":"
        
        if (typeof value_secret_3 !== 'string') {
          if (value_secret_3 === null) {
            json += JSON_STR_EMPTY_STRING
          } else if (value_secret_3 instanceof Date) {
            json += asDateTime(value_secret_3)
          } else if (value_secret_3 instanceof RegExp) {
            json += asString(value_secret_3.source)
          } else {
            json += asString(value_secret_3.toString())
          }
        } else {
          json += asString(value_secret_3)
        }
        
      } else {
        throw new Error('"secret" is required!')
      }
      
      const value_createdAt_4 = obj["createdAt"]
      if (value_createdAt_4 !== undefined) {
        json += ",\"createdAt\":"
        json += asDateTime(value_createdAt_4)
      } else {
        throw new Error('"createdAt" is required!')
      }
      
      const value_description_5 = obj["description"]
      if (value_description_5 !== undefined) {
        json += ",\"description\":"
        
        if (typeof value_description_5 !== 'string') {
          if (value_description_5 === null) {
            json += JSON_STR_EMPTY_STRING
          } else if (value_description_5 instanceof Date) {
            json += asDateTime(value_description_5)
          } else if (value_description_5 instanceof RegExp) {
            json += asString(value_description_5.source)
          } else {
            json += asString(value_description_5.toString())
          }
        } else {
          json += asString(value_description_5)
        }
        
      }

return json + JSON_STR_END_OBJECT

      }
    
    const main = anonymous0
    return main
    
}(validator, serializer)})()],
  ["{\"type\":\"array\",\"maxItems\":1000,\"items\":{\"type\":\"object\",\"required\":[\"id\",\"plantId\",\"status\",\"attempts\"],\"properties\":{\"id\":{\"description\":\"A delivery's id, the `webhook-id` its receiver sees on every attempt\",\"type\":\"string\",\"pattern\":\"^msg_[1-9][0-9]{0,17}$\",\"maxLength\":22},\"plantId\":{\"description\":\"The id of the plant the event is about\",\"type\":\"integer\",\"format\":\"int64\"},\"status\":{\"description\":\"`pending` until a 2xx (`delivered`) or the last attempt failed (`failed`)\",\"type\":\"string\",\"enum\":[\"pending\",\"delivered\",\"failed\"]},\"attempts\":{\"description\":\"Attempts made so far\",\"type\":\"integer\",\"format\":\"int32\",\"minimum\":0,\"maximum\":1000},\"lastStatus\":{\"description\":\"The HTTP status the receiver answered last, if it answered\",\"type\":\"integer\",\"format\":\"int32\",\"minimum\":100,\"maximum\":599},\"lastError\":{\"description\":\"Why the last attempt failed, if it did\",\"type\":\"string\",\"maxLength\":1024},\"nextAttemptAt\":{\"description\":\"When the next attempt is due, while pending\",\"type\":\"string\",\"format\":\"date-time\",\"maxLength\":32},\"deliveredAt\":{\"description\":\"When a receiver acknowledged it\",\"type\":\"string\",\"format\":\"date-time\",\"maxLength\":32}}}}", (() => {
  'use strict'

  const Serializer = helper0
  const serializerState = {"mode":"standalone"}
  const serializer = Serializer.restoreFromState(serializerState)

  const validator = null


  return function anonymous(validator,serializer
) {

    
const {
  asString,
  asNumber,
  asBoolean,
  asDateTime,
  asDate,
  asTime,
  asUnsafeString,
  asPlainStringArray
} = serializer

const asInteger = serializer.asInteger.bind(serializer)


    const JSON_STR_BEGIN_OBJECT = '{'
    const JSON_STR_END_OBJECT = '}'
    const JSON_STR_BEGIN_ARRAY = '['
    const JSON_STR_END_ARRAY = ']'
    const JSON_STR_COMMA = ','
    const JSON_STR_COLONS = ':'
    const JSON_STR_QUOTE = '"'
    const JSON_STR_EMPTY_OBJECT = JSON_STR_BEGIN_OBJECT + JSON_STR_END_OBJECT
    const JSON_STR_EMPTY_ARRAY = JSON_STR_BEGIN_ARRAY + JSON_STR_END_ARRAY
    const JSON_STR_EMPTY_STRING = JSON_STR_QUOTE + JSON_STR_QUOTE
    const JSON_STR_NULL = 'null'
    
  
    
      // "#/items"
      function anonymous1 (input) {
        const obj = (input && typeof input.toJSON === 'function')
    ? input.toJSON()
    : input
  
        if (obj === null) return JSON_STR_EMPTY_OBJECT
        let json = ''

        
      const value_id_1 = obj["id"]
      if (value_id_1 !== undefined) {
        json += "{\"id\":"
        
        if (typeof value_id_1 !== 'string') {
          if (value_id_1 === null) {
            json += JSON_STR_EMPTY_STRING
          } else if (value_id_1 instanceof Date) {
            json += asDateTime(value_id_1)
          } else if (value_id_1 instanceof RegExp) {
            json += asString(value_id_1.source)
          } else {
            json += asString(value_id_1.toString())
          }
        } else {
          json += asString(value_id_1)
        }
        
      } else {
        throw new Error('"id" is required!')
      }
      
      const value_plantId_2 = obj["plantId"]
      if (value_plantId_2 !== undefined) {
        json += ",\"plantId\":"
        json += asInteger(value_plantId_2)
      } else {
        throw new Error('"plantId" is required!')
      }
      
      const value_status_3 = obj["status"]
      if (value_status_3 !== undefined) {
        json += ",\"status\":"
        
        if (typeof value_status_3 !== 'string') {
          if (value_status_3 === null) {
            json += JSON_STR_EMPTY_STRING
          } else if (value_status_3 instanceof Date) {
            json += asDateTime(value_status_3)
          } else if (value_status_3 instanceof RegExp) {
            json += asString(value_status_3.source)
          } else {
            json += asString(value_status_3.toString())
          }
        } else {
          json += asString(value_status_3)
        }
        
      } else {
        throw new Error('"status" is required!')
      }
      
      const value_attempts_4 = obj["attempts"]
      if (value_attempts_4 !== undefined) {
        json += ",\"attempts\":"
        json += asInteger(value_attempts_4)
      } else {
        throw new Error('"attempts" is required!')
      }
      
      const value_lastStatus_5 = obj["lastStatus"]
      if (value_lastStatus_5 !== undefined) {
        json += ",\"lastStatus\":"
        json += asInteger(value_lastStatus_5)
      }

      const value_lastError_6 = obj["lastError"]
      if (value_lastError_6 !== undefined) {
        json += ",\"lastError\":"
        
        if (typeof value_lastError_6 !== 'string') {
          if (value_lastError_6 === null) {
            json += JSON_STR_EMPTY_STRING
          } else if (value_lastError_6 instanceof Date) {
            json += asDateTime(value_lastError_6)
          } else if (value_lastError_6 instanceof RegExp) {
            json += asString(value_lastError_6.source)
          } else {
            json += asString(value_lastError_6.toString())
          }
        } else {
          json += asString(value_lastError_6)
        }
        
      }

      const value_nextAttemptAt_7 = obj["nextAttemptAt"]
      if (value_nextAttemptAt_7 !== undefined) {
        json += ",\"nextAttemptAt\":"
        json += asDateTime(value_nextAttemptAt_7)
      }

      const value_deliveredAt_8 = obj["deliveredAt"]
      if (value_deliveredAt_8 !== undefined) {
        json += ",\"deliveredAt\":"
        json += asDateTime(value_deliveredAt_8)
      }

return json + JSON_STR_END_OBJECT

      }
    

    function anonymous0 (obj) {
      // "#"
      let json = ''
  
    if (obj === null) return JSON_STR_EMPTY_ARRAY
    if (!Array.isArray(obj)) {
      throw new TypeError("The value of '#' does not match schema definition.")
    }
    const arrayLength = obj.length
  
    json += JSON_STR_BEGIN_ARRAY
  
      if (arrayLength > 0) {
        const value = obj[0]
        json += anonymous1(value)
        for (let i = 1; i < arrayLength; i++) {
          json += JSON_STR_COMMA
          const value = obj[i]
          json += anonymous1(value)
        }
      }
      return json + JSON_STR_END_ARRAY
    }
    const main = anonymous0
    return main
    
}(validator, serializer)})()],
  ["{\"type\":\"object\",\"required\":[\"id\",\"plantId\",\"status\",\"attempts\"],\"properties\":{\"id\":{\"description\":\"A delivery's id, the `webhook-id` its receiver sees on every attempt\",\"type\":\"string\",\"pattern\":\"^msg_[1-9][0-9]{0,17}$\",\"maxLength\":22},\"plantId\":{\"description\":\"The id of the plant the event is about\",\"type\":\"integer\",\"format\":\"int64\"},\"status\":{\"description\":\"`pending` until a 2xx (`delivered`) or the last attempt failed (`failed`)\",\"type\":\"string\",\"enum\":[\"pending\",\"delivered\",\"failed\"]},\"attempts\":{\"description\":\"Attempts made so far\",\"type\":\"integer\",\"format\":\"int32\",\"minimum\":0,\"maximum\":1000},\"lastStatus\":{\"description\":\"The HTTP status the receiver answered last, if it answered\",\"type\":\"integer\",\"format\":\"int32\",\"minimum\":100,\"maximum\":599},\"lastError\":{\"description\":\"Why the last attempt failed, if it did\",\"type\":\"string\",\"maxLength\":1024},\"nextAttemptAt\":{\"description\":\"When the next attempt is due, while pending\",\"type\":\"string\",\"format\":\"date-time\",\"maxLength\":32},\"deliveredAt\":{\"description\":\"When a receiver acknowledged it\",\"type\":\"string\",\"format\":\"date-time\",\"maxLength\":32}}}", (() => {
  'use strict'

  const Serializer = helper0
  const serializerState = {"mode":"standalone"}
  const serializer = Serializer.restoreFromState(serializerState)

  const validator = null


  return function anonymous(validator,serializer
) {

    
const {
  asString,
  asNumber,
  asBoolean,
  asDateTime,
  asDate,
  asTime,
  asUnsafeString,
  asPlainStringArray
} = serializer

const asInteger = serializer.asInteger.bind(serializer)


    const JSON_STR_BEGIN_OBJECT = '{'
    const JSON_STR_END_OBJECT = '}'
    const JSON_STR_BEGIN_ARRAY = '['
    const JSON_STR_END_ARRAY = ']'
    const JSON_STR_COMMA = ','
    const JSON_STR_COLONS = ':'
    const JSON_STR_QUOTE = '"'
    const JSON_STR_EMPTY_OBJECT = JSON_STR_BEGIN_OBJECT + JSON_STR_END_OBJECT
    const JSON_STR_EMPTY_ARRAY = JSON_STR_BEGIN_ARRAY + JSON_STR_END_ARRAY
    const JSON_STR_EMPTY_STRING = JSON_STR_QUOTE + JSON_STR_QUOTE
    const JSON_STR_NULL = 'null'
    
  
    
      // "#"
      function anonymous0 (input) {
        const obj = (input && typeof input.toJSON === 'function')
    ? input.toJSON()
    : input
  
        if (obj === null) return JSON_STR_EMPTY_OBJECT
        let json = ''

        
      const value_id_1 = obj["id"]
      if (value_id_1 !== undefined) {
        json += "{\"id\":"
        
        if (typeof value_id_1 !== 'string') {
          if (value_id_1 === null) {
            json += JSON_STR_EMPTY_STRING
          } else if (value_id_1 instanceof Date) {
            json += asDateTime(value_id_1)
          } else if (value_id_1 instanceof RegExp) {
            json += asString(value_id_1.source)
          } else {
            json += asString(value_id_1.toString())
          }
        } else {
          json += asString(value_id_1)
        }
        
      } else {
        throw new Error('"id" is required!')
      }
      
      const value_plantId_2 = obj["plantId"]
      if (value_plantId_2 !== undefined) {
        json += ",\"plantId\":"
        json += asInteger(value_plantId_2)
      } else {
        throw new Error('"plantId" is required!')
      }
      
      const value_status_3 = obj["status"]
      if (value_status_3 !== undefined) {
        json += ",\"status\":"
        
        if (typeof value_status_3 !== 'string') {
          if (value_status_3 === null) {
            json += JSON_STR_EMPTY_STRING
          } else if (value_status_3 instanceof Date) {
            json += asDateTime(value_status_3)
          } else if (value_status_3 instanceof RegExp) {
            json += asString(value_status_3.source)
          } else {
            json += asString(value_status_3.toString())
          }
        } else {
          json += asString(value_status_3)
        }
        
      } else {
        throw new Error('"status" is required!')
      }
      
      const value_attempts_4 = obj["attempts"]
      if (value_attempts_4 !== undefined) {
        json += ",\"attempts\":"
        json += asInteger(value_attempts_4)
      } else {
        throw new Error('"attempts" is required!')
      }
      
      const value_lastStatus_5 = obj["lastStatus"]
      if (value_lastStatus_5 !== undefined) {
        json += ",\"lastStatus\":"
        json += asInteger(value_lastStatus_5)
      }

      const value_lastError_6 = obj["lastError"]
      if (value_lastError_6 !== undefined) {
        json += ",\"lastError\":"
        
        if (typeof value_lastError_6 !== 'string') {
          if (value_lastError_6 === null) {
            json += JSON_STR_EMPTY_STRING
          } else if (value_lastError_6 instanceof Date) {
            json += asDateTime(value_lastError_6)
          } else if (value_lastError_6 instanceof RegExp) {
            json += asString(value_lastError_6.source)
          } else {
            json += asString(value_lastError_6.toString())
          }
        } else {
          json += asString(value_lastError_6)
        }
        
      }

      const value_nextAttemptAt_7 = obj["nextAttemptAt"]
      if (value_nextAttemptAt_7 !== undefined) {
        json += ",\"nextAttemptAt\":"
        json += asDateTime(value_nextAttemptAt_7)
      }

      const value_deliveredAt_8 = obj["deliveredAt"]
      if (value_deliveredAt_8 !== undefined) {
        json += ",\"deliveredAt\":"
        json += asDateTime(value_deliveredAt_8)
      }

return json + JSON_STR_END_OBJECT

      }
    
    const main = anonymous0
    return main
    
}(validator, serializer)})()]
])
