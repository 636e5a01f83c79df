---@meta synodic.buffer
-- Typed arrays shared with native code (`include/synodic.h`).

---@class synodic.buf: userdata

---@class synodic.buffer
local buffer = {}

---A buffer of `n` elements of `kind` ("f64", "f32", "i64", "i32", "u8", ...).
---@param kind string
---@param n integer
---@return synodic.buf
function buffer.new(kind, n) end

---A buffer holding a copy of the string's bytes.
---@param bytes string
---@return synodic.buf
function buffer.from(bytes) end

---A buffer of `kind` filled from a Lua list.
---@param kind string
---@param list number[]
---@return synodic.buf
function buffer.fromtable(kind, list) end

---Whether two buffers share their bytes.
---@param a synodic.buf
---@param b synodic.buf
---@return boolean
function buffer.shares(a, b) end

return buffer
