//! The connection registry: clients (or connection settings) registered by name by the host, which
//! `kind: reference` connections in `.prompty` files resolve to at execution.

use super::store::Store;
use crate::{Error, Result};
use std::any::Any;
use std::sync::{Arc, LazyLock};

type AnyClient = dyn Any + Send + Sync;

static CONNECTIONS: LazyLock<Store<AnyClient>> = LazyLock::new(|| Store::new(Vec::new));

/// Registers a client under `name`. A prompt whose connection is `{kind: reference, name: <name>}`
/// uses it. The client is whatever the provider expects (a configured HTTP client, a
/// [`crate::Connection`] with endpoint and key, ...).
///
/// ```
/// use prompty::{register_connection, get_connection_as, Connection, ConnectionCommon, Secret};
/// register_connection("prod-openai", Connection::Key {
///     endpoint: Some("https://api.openai.com/v1".into()),
///     api_key: Some(Secret::new("sk-...")),
///     common: ConnectionCommon::default(),
/// });
/// let c = get_connection_as::<Connection>("prod-openai")?;
/// assert_eq!(c.kind(), "key");
/// # Ok::<(), prompty::Error>(())
/// ```
pub fn register_connection(name: impl Into<String>, client: impl Any + Send + Sync) {
    CONNECTIONS.register(name.into(), Arc::new(client));
}

/// The client registered under `name`; an error naming it when there is none.
///
/// ```
/// prompty::register_connection("answer", 42_u32);
/// let any = prompty::get_connection("answer")?;
/// assert_eq!(any.downcast_ref::<u32>(), Some(&42));
/// assert!(prompty::get_connection("missing").is_err());
/// # Ok::<(), prompty::Error>(())
/// ```
pub fn get_connection(name: &str) -> Result<Arc<AnyClient>> {
    CONNECTIONS.get(name).ok_or_else(|| Error::UnknownComponent {
        component: "connection",
        key: crate::Secret::scrub(name).into_owned(),
        known: CONNECTIONS.known(),
        register: "prompty::register_connection(name, client)",
        hint: String::new(),
    })
}

/// The client registered under `name`, as a `T`; an error when there is none or it is another type.
///
/// ```
/// prompty::register_connection("n", String::from("client"));
/// assert_eq!(prompty::get_connection_as::<String>("n")?.as_str(), "client");
/// assert!(prompty::get_connection_as::<u8>("n").is_err());
/// # Ok::<(), prompty::Error>(())
/// ```
pub fn get_connection_as<T: Any + Send + Sync>(name: &str) -> Result<Arc<T>> {
    get_connection(name)?.downcast::<T>().map_err(|_| Error::Execution {
        message: format!("connection '{name}' is registered, but not as a `{}`", std::any::type_name::<T>()),
    })
}

/// Forgets every registered connection.
///
/// ```
/// prompty::register_connection("tmp", ());
/// prompty::clear_connections();
/// assert!(prompty::get_connection("tmp").is_err());
/// ```
pub fn clear_connections() {
    CONNECTIONS.clear_explicit();
}
