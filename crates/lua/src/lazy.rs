//! Library tables filled on first use. A process that calls `s.send` and
//! `s.receive` should not pay, in memory and start-up time, for every other
//! function of every library it never touches. A lazy library table starts
//! empty with an `__index` that finds the field in a static list, stores it
//! in the table (so later reads are plain hits) and returns it.
//!
//! The standard libraries' functions are `static` in Lua's C sources, so
//! their lists are read once per OS process from a template state.

use std::ffi::{c_int, c_void, CStr, CString};
use std::sync::OnceLock;

use mlua_sys as ffi;

use crate::util::to_bytes;

/// The functions of one library, by name.
pub struct Library {
    fields: Vec<(CString, ffi::lua_CFunction)>,
}

impl Library {
    pub fn from_static(fields: &[(&CStr, ffi::lua_CFunction)]) -> Library {
        Library { fields: fields.iter().map(|(n, f)| ((*n).to_owned(), *f)).collect() }
    }

    /// Stores every function into the table at `idx`.
    pub(crate) unsafe fn set_into(&self, L: *mut ffi::lua_State, idx: c_int) {
        let t = ffi::lua_absindex(L, idx);
        for (n, f) in &self.fields {
            ffi::lua_pushcfunction(L, *f);
            ffi::lua_setfield(L, t, n.as_ptr());
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.fields.len()
    }

    fn find(&self, name: &[u8]) -> Option<ffi::lua_CFunction> {
        self.fields.iter().find(|(n, _)| n.to_bytes() == name).map(|(_, f)| *f)
    }
}

/// Defines a native module's `open` function: a lazily filled table of the
/// functions in `$funcs` (one list per module, built once per OS process).
macro_rules! lazy_module {
    ($funcs:expr) => {
        pub unsafe extern "C-unwind" fn open(L: *mut mlua_sys::lua_State) -> std::ffi::c_int {
            static LIB: std::sync::OnceLock<$crate::lazy::Library> = std::sync::OnceLock::new();
            $crate::lazy::push_lazy(L, LIB.get_or_init(|| $crate::lazy::Library::from_static($funcs)));
            1
        }
    };
}
pub(crate) use lazy_module;

/// Standard-library functions read from a template state.
pub(crate) struct Templates {
    pub base: Library,
    pub string: Library,
    /// The string metatable's metamethods (arithmetic on strings), `__index` excluded.
    pub string_meta: Library,
}

impl Templates {
    pub(crate) fn string_meta_len(&self) -> usize {
        self.string_meta.len()
    }
}

pub(crate) fn templates() -> &'static Templates {
    static T: OnceLock<Templates> = OnceLock::new();
    T.get_or_init(|| unsafe { read_templates() })
}

unsafe fn read_templates() -> Templates {
    let L = ffi::luaL_newstate();
    assert!(!L.is_null(), "cannot create the template Lua state");
    ffi::luaL_requiref(L, c"_G".as_ptr(), ffi::luaopen_base, 1);
    let base = functions_of(L, -1);
    ffi::luaL_requiref(L, c"string".as_ptr(), ffi::luaopen_string, 1);
    let string = functions_of(L, -1);
    push_bytes_str(L, "");
    ffi::lua_getmetatable(L, -1);
    let string_meta = functions_of(L, -1);
    ffi::lua_close(L);
    Templates { base, string, string_meta }
}

unsafe fn push_bytes_str(L: *mut ffi::lua_State, s: &str) {
    ffi::lua_pushlstring(L, s.as_ptr().cast(), s.len());
}

/// The C functions without upvalues stored under string keys in the table at `idx`.
unsafe fn functions_of(L: *mut ffi::lua_State, idx: c_int) -> Library {
    let t = ffi::lua_absindex(L, idx);
    let mut fields = Vec::new();
    ffi::lua_pushnil(L);
    while ffi::lua_next(L, t) != 0 {
        let f = ffi::lua_tocfunction(L, -1);
        let plain = ffi::lua_getupvalue(L, -1, 1).is_null();
        if !plain {
            ffi::lua_settop(L, -2);
        }
        if let (Some(f), true, Some(name)) = (f, plain, (ffi::lua_type(L, -2) == ffi::LUA_TSTRING).then(|| to_bytes(L, -2)).flatten()) {
            if let Ok(name) = CString::new(name) {
                fields.push((name, f));
            }
        }
        ffi::lua_settop(L, -2);
    }
    Library { fields }
}

/// Pushes an empty table that fills itself from `lib`.
pub(crate) unsafe fn push_lazy(L: *mut ffi::lua_State, lib: &'static Library) {
    ffi::lua_createtable(L, 0, 0);
    ffi::lua_createtable(L, 0, 1);
    ffi::lua_pushlightuserdata(L, lib as *const Library as *mut c_void);
    ffi::lua_pushcclosure(L, lazy_index, 1);
    ffi::lua_setfield(L, -2, c"__index".as_ptr());
    ffi::lua_setmetatable(L, -2);
}

unsafe extern "C-unwind" fn lazy_index(L: *mut ffi::lua_State) -> c_int {
    let lib = &*(ffi::lua_touserdata(L, ffi::lua_upvalueindex(1)) as *const Library);
    match to_bytes(L, 2).filter(|_| ffi::lua_type(L, 2) == ffi::LUA_TSTRING).and_then(|k| lib.find(k)) {
        Some(f) => {
            ffi::lua_pushcfunction(L, f);
            ffi::lua_pushvalue(L, 2);
            ffi::lua_pushvalue(L, -2);
            ffi::lua_rawset(L, 1);
            1
        }
        None => 0,
    }
}

/// A base-library function by name, if there is one.
pub(crate) fn base_function(name: &[u8]) -> Option<ffi::lua_CFunction> {
    templates().base.find(name)
}
