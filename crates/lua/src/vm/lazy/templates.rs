//! Building the lazy tables' templates, once per OS process: the
//! standard libraries' entries read from a template state that opens them
//! (their functions are `static` in Lua's C sources, so only a state can
//! give them), Synodic's from its modules' function lists; and the
//! original functions by module and name, for what must call one that a
//! process may have replaced.

use super::*;

/// The standard libraries of `package.loaded` (not `package`, which is
/// made whole: its functions share the package table as an upvalue).
const LIBRARIES: [(&str, ffi::lua_CFunction); 8] = [
    ("string", ffi::luaopen_string),
    ("table", ffi::luaopen_table),
    ("math", ffi::luaopen_math),
    ("utf8", ffi::luaopen_utf8),
    ("os", ffi::luaopen_os),
    ("io", ffi::luaopen_io),
    ("coroutine", ffi::luaopen_coroutine),
    ("debug", ffi::luaopen_debug),
];

/// Reads the templates from a state of its own. (An error in that state,
/// which has no protected call, goes to the node's panic handler, which aborts:
/// nothing unwinds over the vectors built here.)
pub(super) unsafe fn build_templates() -> Vec<Template> {
    // A new state of its own, used on this thread only.
    let L = crate::vm::state::node_state();
    assert!(!L.is_null(), "cannot create the template Lua state");
    let mut globals = Template::new("_G");
    // SAFETY: `L` is the new state (checked above), its stack empty.
    for (name, entry) in unsafe { entries_of(L, ffi::luaopen_base, false) } {
        if matches!(entry, Entry::Function(_)) {
            globals = globals.with(&name, entry);
        }
    }
    globals = globals
        .with(b"print", Entry::Function(crate::vm::state::print))
        .with(b"require", Entry::Function(crate::vm::state::require))
        .with(b"_G", Entry::Make(make_globals))
        .with(b"_VERSION", Entry::Str((*b"Lua 5.4").into()))
        .with(b"package", Entry::Make(make_loaded))
        .with(b"alua", Entry::Make(make_module));
    let mut loaded = Template::new("_LOADED").with(b"_G", Entry::Make(make_globals)).with(b"package", Entry::Make(make_package));
    let mut all = Vec::new();
    for (name, opener) in LIBRARIES {
        globals = globals.with(name.as_bytes(), Entry::Make(make_loaded));
        loaded = loaded.with(name.as_bytes(), Entry::Make(make_library));
        // The io functions find their files through registry entries that
        // only the opener makes: io is made whole.
        // SAFETY: as above; `entries_of` leaves the stack as it found it.
        all.push(Template::of_entries(name, unsafe { entries_of(L, opener, name == "io") }));
    }
    // SAFETY: `L` is not used again; the entries read are copies (names)
    // or C functions, which outlive it.
    unsafe { ffi::lua_close(L) };
    let mut templates = vec![globals, loaded];
    let mut replaced = Vec::new();
    templates.extend(all.into_iter().map(|t| {
        // The scheduler-aware replacements.
        let functions: &[(&std::ffi::CStr, ffi::lua_CFunction)] = match t.module {
            "debug" => &[(c"gethook", crate::vm::preempt::gethook)],
            library => crate::vm::module::replacements().find(|(name, _)| *name == library).map_or(&[], |(_, functions)| functions),
        };
        for (name, _) in functions {
            if let Some((_, f)) = t.functions().find(|(n, _)| *n == name.to_bytes()) {
                replaced.push((t.module, name.to_bytes(), f));
            }
        }
        t.with_functions(functions)
    }));
    let _ = REPLACED.set(replaced);
    for (module, _, functions) in crate::vm::module::native() {
        if let Some(functions) = functions {
            templates.push(Template::new(module.to_str().expect("a module's name is ASCII")).with_functions(functions));
        }
    }
    assert!(templates.len() <= u8::MAX as usize);
    templates
}

/// The standard libraries' own functions that Synodic replaced (a few):
/// library, name, function.
#[allow(clippy::type_complexity)]
static REPLACED: OnceLock<Vec<(&str, &[u8], ffi::lua_CFunction)>> = OnceLock::new();

/// A standard library's own function `module.name`, even where a template
/// has a replacement (which may call it).
pub(crate) fn original(module: &str, name: &[u8]) -> Option<ffi::lua_CFunction> {
    let templates = templates();
    if let Some((_, _, f)) = REPLACED.get()?.iter().find(|(m, n, _)| *m == module && *n == name) {
        return Some(*f);
    }
    templates.iter().find(|t| t.module == module)?.functions().find(|(n, _)| *n == name).map(|(_, f)| f)
}

/// The entries a library opener makes, read from the template state: plain
/// C functions as they are, constants by value, anything else (closures
/// sharing state, userdata) made with the opener; with `whole`, every entry
/// is made with the opener.
unsafe fn entries_of(L: *mut ffi::lua_State, opener: ffi::lua_CFunction, whole: bool) -> Vec<(Vec<u8>, Entry)> {
    // SAFETY: `L` is `build_templates`' own state (the caller's), where an
    // error aborts (see `build_templates`); the library's table lands at `t`.
    let t = unsafe {
        ffi::lua_pushcfunction(L, opener);
        ffi::lua_call(L, 0, 1);
        ffi::lua_gettop(L)
    };
    let mut entries = Vec::new();
    // SAFETY: as above; a walk of the table at `t` (the key at `t + 1`, the
    // value at `t + 2`, whatever `lua_getupvalue` pushes above it dropped by
    // the first `lua_settop`). `to_bytes` reads a key only when it is a
    // string, so `lua_next` goes on; the bytes are copied while on the stack.
    unsafe {
        ffi::lua_pushnil(L);
        while ffi::lua_next(L, t) != 0 {
            if ffi::lua_type(L, -2) == ffi::LUA_TSTRING {
                let name = to_bytes(L, -2).unwrap_or_default().to_vec();
                let entry = match ffi::lua_type(L, -1) {
                    _ if whole => Some(Entry::Opened(opener)),
                    ffi::LUA_TFUNCTION if ffi::lua_iscfunction(L, -1) != 0 && ffi::lua_getupvalue(L, -1, 1).is_null() => ffi::lua_tocfunction(L, -1).map(Entry::Function),
                    ffi::LUA_TNUMBER if ffi::lua_isinteger(L, -1) != 0 => Some(Entry::Integer(ffi::lua_tointegerx(L, -1, std::ptr::null_mut()))),
                    ffi::LUA_TNUMBER => Some(Entry::Number(ffi::lua_tonumberx(L, -1, std::ptr::null_mut()))),
                    ffi::LUA_TSTRING => Some(Entry::Str(to_bytes(L, -1).unwrap_or_default().into())),
                    _ => Some(Entry::Opened(opener)),
                };
                ffi::lua_settop(L, t + 2);
                if let Some(e) = entry {
                    entries.push((name, e));
                }
            }
            ffi::lua_settop(L, t + 1);
        }
        ffi::lua_settop(L, t - 1);
    }
    entries
}
