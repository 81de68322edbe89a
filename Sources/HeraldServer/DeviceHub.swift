import Foundation
public import HeraldCore
public import HeraldHub
import HeraldStore

/// The hub that the app backend registers devices with and notifies them through.
///
/// The app backend only needs these few operations, so it runs on Herald's own in-process
/// hub (``LocalDeviceHub``) or on any hub reached through the hub REST API (the `herald`
/// binary's remote hub, built on `NotificationHubClient`), chosen by configuration.
public protocol DeviceHub: Sendable {
    /// The platforms this hub delivers to: what a notify without `pns` is rendered for.
    var platforms: Set<Platform> { get }

    /// A new registration id, valid for a first ``saveRegistration(_:)``.
    func newRegistrationID() async throws -> String

    /// Registrations with this handle, as stored (any platform), oldest first.
    func registrations(handle: String) async throws -> [Registration]

    func registration(id: String) async throws -> Registration?

    /// Creates or replaces a registration. Throws ``HeraldError/gone(_:)`` when the id was
    /// neither issued by ``newRegistrationID()`` nor is a registration (any more).
    func saveRegistration(_ registration: Registration) async throws -> Registration

    func deleteRegistrations(ids: [String]) async throws

    /// Sends and waits up to `wait` for delivery to end; returns the notification as it
    /// is then, with its outcome counts.
    func send(tagExpression: String, payloads: [PlatformPayload], wait: Duration) async throws -> NotificationRecord
}

extension Registration {
    /// The app-backend user a registration belongs to: its owner, or on a hub that keeps
    /// no owners, the user of its `username:` tag.
    public var appUser: String? {
        if let owner { return owner }
        return tags.first { $0.hasPrefix("username:") }.map { String($0.dropFirst("username:".count)) }
    }
}

/// The app backend on Herald's own hub, in process.
public struct LocalDeviceHub: DeviceHub {
    public let hub: Hub
    /// How long an issued registration id waits for its first save.
    static let reservationLifetime: Duration = .seconds(24 * 3600)

    public init(hub: Hub) {
        self.hub = hub
    }

    public var platforms: Set<Platform> { hub.configuredPlatforms }

    public func newRegistrationID() async throws -> String {
        let id = RegistrationID.make()
        try await hub.store.reserveRegistrationID(id, owner: nil, ttl: Self.reservationLifetime)
        return id
    }

    public func registrations(handle: String) async throws -> [Registration] {
        try await hub.store.registrations(handle: handle, platform: nil)
    }

    public func registration(id: String) async throws -> Registration? {
        try await hub.store.registration(id: id)
    }

    public func saveRegistration(_ registration: Registration) async throws -> Registration {
        let store = hub.store
        if try await store.registration(id: registration.id) == nil, try await !store.isRegistrationIDValid(registration.id) {
            throw HeraldError.gone("the registration id is not valid (it expired or was deleted); request a new one with POST /api/register")
        }
        return try await store.upsertRegistration(registration, ifVersion: nil)
    }

    public func deleteRegistrations(ids: [String]) async throws {
        try await hub.store.deleteRegistrations(ids: ids)
    }

    public func send(tagExpression: String, payloads: [PlatformPayload], wait: Duration) async throws -> NotificationRecord {
        let record = try await hub.enqueue(tagExpression: tagExpression, payloads: payloads)
        return try await hub.waitForCompletion(id: record.id, timeout: wait) ?? record
    }
}
