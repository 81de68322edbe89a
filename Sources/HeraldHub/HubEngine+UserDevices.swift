import Foundation
public import HeraldCore
import HeraldStore

/// A hub's engine keeps the app backend's devices itself: a registration's owner is the user
/// who saved it, and every rule is one transaction of the store.
extension HubEngine: UserDevices {
    public var platforms: Set<Platform> { configuredPlatforms }

    public func registrationID(handle: String?, user: String) async throws -> String {
        guard let handle else { return try await issueRegistrationID(owner: user) }
        guard !handle.isEmpty else { throw HeraldError.badRequest("the handle query parameter is empty") }
        // The handle's platform is not known yet: look it up as sent and as an APNs token is stored.
        return try await store.registrationID(
            forHandles: [handle, handle.lowercased()],
            owner: user,
            orReserve: RegistrationID.make(),
            ttl: Self.reservationLifetime
        )
    }

    public func saveRegistration(_ registration: Registration, user: String) async throws -> Registration {
        var registration = registration
        registration.owner = user
        try check(registration)
        do {
            return try await store.upsertRegistration(
                registration,
                when: RegistrationCondition(mustBeIssued: true, owner: user, replacesOtherRegistrationsOfHandle: true)
            )
        } catch let error as HeraldError where error.code == .gone {
            throw HeraldError.gone("the registration id is not valid (it expired or was deleted); request a new one with POST /api/register")
        }
    }

    public func deleteRegistration(id: String, user: String) async throws {
        guard try await store.deleteRegistration(id: id, ifVersion: nil, owner: user) else {
            throw HeraldError.notFound("no such registration")
        }
    }

    public func confirm(_ notificationIDs: [String], registrationID: String, user: String) async throws {
        try await confirm(notificationIDs, from: .registration(id: registrationID, owner: user))
    }

    public func send(_ request: SendRequest, wait: Duration) async throws -> SendResult {
        var result = try await send(request)
        result.record = try await waitForCompletion(id: result.record.id, timeout: wait) ?? result.record
        return result
    }

    /// A new registration id reserved for `owner`.
    func issueRegistrationID(owner: String) async throws -> String {
        let id = RegistrationID.make()
        try await store.reserveRegistrationID(id, owner: owner, ttl: Self.reservationLifetime)
        return id
    }
}
