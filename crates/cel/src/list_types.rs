//! Lists with `x-kubernetes-list-type: set` or `map` compare as upstream's do:
//! a set equals a list holding the same elements in any order, a map-list one
//! holding, for each key, an equal element in any order. Everything else (size,
//! index, `in`, iteration, `+`, conversions) is the plain list's.

use cel::common::traits::{Adder, Container, Indexer, Iterable, Sizer, Zeroer};
use cel::common::types::{CelList, CelMapKey, Type};
use cel::common::value::{Builtin, BuiltinRef, Val};

/// How a list's elements are matched for equality.
#[derive(Debug, Clone)]
pub(crate) enum Matching {
    /// `set`: any order.
    Set,
    /// `map`: by these key fields, any order.
    Map(Vec<String>),
}

/// A list of a `set` or `map` list type.
#[derive(Debug, Clone)]
pub(crate) struct TypedList<'v> {
    list: CelList<'v>,
    matching: Matching,
}

impl<'v> TypedList<'v> {
    pub(crate) fn new(list: CelList<'v>, matching: Matching) -> Self {
        TypedList { list, matching }
    }
}

/// The elements of `other`, if it is a list (plain or typed).
fn elements<'a, 'v>(other: &'a (dyn Val + 'v)) -> Option<&'a [Box<dyn Val + 'v>]> {
    match other.as_builtin() {
        BuiltinRef::List(l) => Some(l.inner()),
        _ => None,
    }
}

/// The value of `field` in a map element.
fn field<'a, 'v>(element: &'a (dyn Val + 'v), field: &str) -> Option<&'a (dyn Val + 'v)> {
    let BuiltinRef::Map(m) = element.as_builtin() else {
        return None;
    };
    let key: CelMapKey<'v> = CelMapKey::from(field.to_string());
    m.inner().get(&key).map(|v| v.as_ref())
}

impl<'v> Val for TypedList<'v> {
    fn get_type(&self) -> &Type {
        self.list.get_type()
    }

    fn cel_type() -> &'static Type {
        <CelList<'static> as Val>::cel_type()
    }

    fn as_adder<'b, 'w>(&'b self) -> Option<&'b (dyn Adder + 'w)>
    where
        Self: 'w,
    {
        self.list.as_adder()
    }

    fn as_container(&self) -> Option<&dyn Container> {
        self.list.as_container()
    }

    fn as_indexer<'b, 'w>(&'b self) -> Option<&'b (dyn Indexer + 'w)>
    where
        Self: 'w,
    {
        self.list.as_indexer()
    }

    fn into_indexer<'w>(self: Box<Self>) -> Option<Box<dyn Indexer + 'w>>
    where
        Self: 'w,
    {
        Box::new(self.list).into_indexer()
    }

    fn as_iterable<'b, 'w>(&'b self) -> Option<&'b (dyn Iterable + 'w)>
    where
        Self: 'w,
    {
        self.list.as_iterable()
    }

    fn as_sizer(&self) -> Option<&dyn Sizer> {
        self.list.as_sizer()
    }

    fn as_zeroer(&self) -> Option<&dyn Zeroer> {
        self.list.as_zeroer()
    }

    fn equals(&self, other: &dyn Val) -> bool {
        let (Some(mine), Some(theirs)) = (Some(self.list.inner()), elements(other)) else {
            return false;
        };
        if mine.len() != theirs.len() {
            return false;
        }
        match &self.matching {
            Matching::Set => mine
                .iter()
                .all(|e| theirs.iter().any(|t| e.equals(t.as_ref()))),
            Matching::Map(keys) => mine.iter().all(|e| {
                theirs
                    .iter()
                    .find(|t| {
                        keys.iter()
                            .all(|k| match (field(e.as_ref(), k), field(t.as_ref(), k)) {
                                (Some(a), Some(b)) => a.equals(b),
                                (None, None) => true,
                                _ => false,
                            })
                    })
                    .is_some_and(|t| e.equals(t.as_ref()))
            }),
        }
    }

    fn clone_as_boxed<'w>(&self) -> Box<dyn Val + 'w>
    where
        Self: 'w,
    {
        Box::new(self.clone())
    }

    fn as_builtin<'b, 'w>(&'b self) -> BuiltinRef<'b, 'w>
    where
        Self: 'w,
    {
        self.list.as_builtin()
    }

    fn into_builtin<'w>(self: Box<Self>) -> Option<Builtin<'w>>
    where
        Self: 'w,
    {
        Box::new(self.list).into_builtin()
    }
}
