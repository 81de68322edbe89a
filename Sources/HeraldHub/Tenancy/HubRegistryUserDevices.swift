public import HeraldCore

/// The app backend's devices in a hub of this server's catalog. A send goes to the hub's
/// engine as the ``HubRegistry`` has it open then, so a change of the hub's credentials is
/// followed at once; the device calls (registration ids, registrations, receipts) use none of
/// the hub's definition, and go to the engine found within the last
/// ``definitionReadInterval``, so that they do not read the definition once each (with a
/// shared PostgreSQL, a query).
public struct HubRegistryUserDevices: UserDevices {
    public let registry: HubRegistry
    /// The hub's name.
    public let hubName: String

    public init(registry: HubRegistry, hubName: String) {
        self.registry = registry
        self.hubName = hubName
    }

    /// How long the device calls use the engine found for an earlier call: a hub deleted (or
    /// created again) meanwhile is seen within it.
    public static let definitionReadInterval: Duration = .seconds(1)

    /// The hub's engine, opened if needed, as the catalog has the hub now.
    ///
    /// - Throws: ``HeraldError`` `unavailable` if the hub does not exist (it was deleted).
    public func engine() async throws -> HubEngine {
        try found(await registry.engine(named: hubName))
    }

    /// The hub's engine as found within the last ``definitionReadInterval``, for the calls that
    /// use none of its definition.
    ///
    /// - Throws: ``HeraldError`` `unavailable` if the hub does not exist (it was deleted).
    func deviceEngine() async throws -> HubEngine {
        try found(await registry.engine(named: hubName, readWithin: Self.definitionReadInterval))
    }

    private func found(_ engine: HubEngine?) throws -> HubEngine {
        guard let engine else {
            throw HeraldError.unavailable("the app backend's hub '\(hubName)' does not exist; create it with herald hub create \(hubName)")
        }
        return engine
    }

    public var platforms: Set<Platform> { registry.openEngine(named: hubName)?.platforms ?? [] }

    public func registrationID(handle: String?, user: String) async throws -> String {
        try await deviceEngine().registrationID(handle: handle, user: user)
    }

    public func saveRegistration(_ registration: Registration, user: String) async throws -> Registration {
        try await deviceEngine().saveRegistration(registration, user: user)
    }

    public func deleteRegistration(id: String, user: String) async throws {
        try await deviceEngine().deleteRegistration(id: id, user: user)
    }

    public func confirm(_ notificationIDs: [String], registrationID: String, user: String) async throws {
        try await deviceEngine().confirm(notificationIDs, registrationID: registrationID, user: user)
    }

    public func send(_ request: SendRequest, wait: Duration) async throws -> SendResult {
        try await engine().send(request, wait: wait)
    }
}
