/// What the app backend keeps in its hub's store: accounts and sign-in sessions
/// (``AccountStore``), and the secure and rich content its users' devices fetch
/// (``ContentStore``), and nothing of the hub's devices or notifications, which it reaches
/// only through the engine (`UserDevices`).
///
/// Every ``HeraldStore`` is one. HeraldServer takes it as `appStore`; the hub registry hands
/// out the app hub's store as one (`HubRegistry.appBackendStore(named:)`), so nothing above
/// the engine holds a whole store.
public protocol AppBackendStore: AccountStore, ContentStore {}
