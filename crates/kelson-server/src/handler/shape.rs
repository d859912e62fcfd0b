//! What registration learns from a handler function's signature ([`Shape`]: its schemas and the
//! states it needs), and the states a server was built with ([`StateMap`]), which those needs are
//! checked against.

use std::any::{Any, TypeId};
use std::sync::Arc;

use kelson_types::JsonObject;

/// What registration learns from a handler function's signature.
#[doc(hidden)]
#[derive(Debug, Default, Clone)]
pub struct Shape {
    /// The schema of its arguments parameter, if it has one.
    pub(crate) arguments: Option<JsonObject>,
    /// The output schema its return type declares.
    pub(crate) output: Option<JsonObject>,
    /// Whether its structured output is put under `result` (a [`Json<T>`](crate::Json) whose
    /// schema is not an object).
    pub(crate) wrap_output: bool,
    /// The states it reads.
    pub(crate) states: Vec<StateNeed>,
}

/// A state type a handler needs, checked when it is registered.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct StateNeed {
    pub(crate) type_id: TypeId,
    pub(crate) type_name: &'static str,
}

impl StateNeed {
    pub(crate) fn of<S: 'static>() -> Self {
        StateNeed {
            type_id: TypeId::of::<S>(),
            type_name: std::any::type_name::<S>(),
        }
    }
}

/// The states a server was built with, by type.
#[derive(Default, Clone)]
pub(crate) struct StateMap {
    map: std::collections::HashMap<TypeId, Arc<dyn Any + Send + Sync>>,
}

impl StateMap {
    pub(crate) fn insert<S: Send + Sync + 'static>(&mut self, state: Arc<S>) {
        self.map.insert(TypeId::of::<S>(), state);
    }

    pub(crate) fn get<S: Send + Sync + 'static>(&self) -> Option<Arc<S>> {
        let any = Arc::clone(self.map.get(&TypeId::of::<S>())?);
        any.downcast::<S>().ok()
    }

    pub(crate) fn has(&self, need: &StateNeed) -> bool {
        self.map.contains_key(&need.type_id)
    }
}
