//! What tools see of a tuple space (the console's `scope`, the
//! dashboard's tuple scope): its classes of tuples and their counts, the
//! tuples of one class, the callers waiting with their templates, and the
//! operations done so far (rates are the tools' to work out from two
//! looks). Nothing here changes the store.

use std::fmt;

use super::*;

/// Operations a space has done since it was made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ops {
    /// Tuples put in (`out`, `eval`'s result).
    pub outs: u64,
    /// Tuples taken out (`take`/`in`, `inp`, `take_all`, a waiting taker served).
    pub takes: u64,
    /// Tuples read (`rd`, `rdp`, a waiting reader served).
    pub reads: u64,
}

/// A caller blocked on a space, as tools show it.
#[derive(Clone, Debug)]
pub struct WaiterView {
    pub waiter: Waiter,
    /// "take", "rd" or "where" (woken to look again by a `where` template).
    pub mode: &'static str,
    /// The template as Lua would write it: `("job", ?int)`.
    pub template: String,
}

impl Store {
    /// Callers blocked on the space.
    pub fn waiting(&self) -> usize {
        self.waiters.len()
    }

    /// The classes of tuples held, for tools (the tuple scope): each one's
    /// arity, first field (`None` for the class of first fields that are
    /// not plain values) and size; by arity, then oldest tuple first.
    pub fn classes(&self) -> Vec<(usize, Option<Field>, usize)> {
        let mut found: Vec<(usize, u64, Option<Field>, usize)> = Vec::new();
        for (&arity, a) in &self.arities {
            for (key, class) in a.keyed.iter().map(|(k, c)| (Some(k), c)).chain(std::iter::once((None, &a.unkeyed))) {
                if let Some(oldest) = class.front() {
                    found.push((arity, oldest.seq, key.map(Key::field), class.len()));
                }
            }
        }
        found.sort_by_key(|&(arity, seq, ..)| (arity, seq));
        found.into_iter().map(|(arity, _, key, n)| (arity, key, n)).collect()
    }

    /// Up to `max` tuples of one class (see [`Store::classes`]), oldest first.
    pub fn class(&self, arity: usize, first: Option<&Field>, max: usize) -> Vec<Tuple> {
        let Some(a) = self.arities.get(&arity) else { return Vec::new() };
        let class = match first.and_then(Field::key) {
            Some(k) => a.keyed.get(&k),
            None => Some(&a.unkeyed),
        };
        class.map_or_else(Vec::new, |c| c.iter().take(max).map(|e| e.tuple.clone()).collect())
    }

    /// Up to `max` callers blocked on the space, oldest first.
    pub fn waiters(&self, max: usize) -> Vec<WaiterView> {
        self.waiters
            .iter()
            .take(max)
            .map(|w| WaiterView {
                waiter: w.waiter,
                mode: match w.mode {
                    Mode::Take => "take",
                    Mode::Read => "rd",
                    Mode::Notify => "where",
                },
                template: shown(&w.template),
            })
            .collect()
    }

    /// The operations done so far.
    pub fn ops(&self) -> Ops {
        self.ops
    }
}

/// A template as Lua would write it.
pub fn shown(template: &[Pattern]) -> String {
    let fields: Vec<String> = template.iter().map(|p| p.to_string()).collect();
    format!("({})", fields.join(", "))
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Field::Bool(b) => write!(f, "{b}"),
            Field::Int(i) => write!(f, "{i}"),
            Field::Float(x) => write!(f, "{x:?}"),
            Field::Str(s) => write!(f, "{:?}", String::from_utf8_lossy(s)),
            Field::Pid(p) => match crate::Pid::from_raw(*p) {
                Some(pid) => write!(f, "{pid}"),
                None => write!(f, "<pid>"),
            },
            Field::Opaque(kind) => write!(f, "<{}>", kind.name()),
        }
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pattern::Actual(field) => write!(f, "{field}"),
            Pattern::Formal(kinds) => {
                let names: Vec<&str> = Kind::ALL.iter().filter(|k| kinds.contains(**k)).map(|k| k.name()).collect();
                match names.as_slice() {
                    [] => write!(f, "?any"),
                    ["int", "float"] => write!(f, "?number"),
                    _ => write!(f, "?{}", names.join("|")),
                }
            }
            Pattern::Any => write!(f, "?any"),
            Pattern::Never => write!(f, "<table>"),
        }
    }
}

impl Kind {
    /// The kind's name as the formals call it (`linda.int`...).
    pub fn name(self) -> &'static str {
        ["boolean", "int", "float", "string", "table", "buffer", "pid", "value"][self as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waiters_show_their_templates_and_ops_count() {
        let mut st = Store::default();
        let job = Field::Str(Arc::new(b"job".as_slice().into()));
        let w = Waiter { pid: crate::Pid::new(0, 3, 0), ticket: 1 };
        let template = vec![Pattern::Actual(job.clone()), Pattern::Formal(Kinds::of(&[Kind::Int, Kind::Float])), Pattern::Formal(Kinds::of(&[Kind::String]))];
        assert!(st.find_or_wait(template, Mode::Take, w).is_none());
        let shown = st.waiters(10);
        assert_eq!(shown.len(), 1);
        assert_eq!(shown[0].mode, "take");
        assert_eq!(shown[0].template, "(\"job\", ?number, ?string)");
        st.out(Tuple { fields: vec![job.clone(), Field::Int(1), Field::Str(Arc::new(b"x".as_slice().into()))], values: Message::from_slice(&[]) });
        st.out(Tuple { fields: vec![job, Field::Int(2)], values: Message::from_slice(&[]) });
        assert!(st.waiters(10).is_empty());
        assert_eq!(st.ops(), Ops { outs: 2, takes: 1, reads: 0 });
    }
}
