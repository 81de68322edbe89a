public import Foundation
public import HeraldCore
import HeraldHubWire
public import HeraldStore

/// The device registry: every rule about registrations and installations, each one a single
/// atomic store operation. The hub REST API and the app backend both go through here; neither
/// touches the store for devices.
extension HubEngine {
    /// How long an issued registration id waits for its first save.
    public static let reservationLifetime: Duration = .seconds(24 * 3600)

    // MARK: Registrations, as the hub REST API has them

    /// A new registration id, valid for a first save until ``reservationLifetime`` has passed.
    public func issueRegistrationID() async throws -> String {
        let id = RegistrationID.make()
        try await store.reserveRegistrationID(id, owner: nil, ttl: Self.reservationLifetime)
        return id
    }

    /// Refuses a registration this hub must not save: a template that cannot render
    /// (``RegistrationTemplate/validate()``), or a handle on a host the platform's devices may
    /// not name (``Configuration/channelHosts``).
    func check(_ registration: Registration) throws(HeraldError) {
        try registration.template?.validate()
        try registration.handleKind.validate(platform: registration.platform, field: "the handle's kind")
        try configuration.channelHosts.check(registration.handle, platform: registration.platform)
    }

    /// Creates a registration under a new id (the registration's own id is ignored).
    ///
    /// - Throws: `badRequest` for a template that cannot render (``RegistrationTemplate/validate()``)
    ///   or a handle on a host that is not allowed, and then nothing is written.
    public func createRegistration(_ registration: Registration) async throws -> Registration {
        try check(registration)
        var registration = registration
        registration.id = RegistrationID.make()
        return try await store.upsertRegistration(registration, when: .none)
    }

    /// Creates or replaces the registration with the registration's id, which must be a
    /// registration or an id issued by ``issueRegistrationID()`` (`410 Gone` otherwise).
    ///
    /// - Parameters:
    ///   - ifVersion: the version the stored registration must have (`412` otherwise).
    ///   - mustExist: an update only (`404` for a registration that does not exist).
    /// - Throws: `badRequest` for a template that cannot render (``RegistrationTemplate/validate()``)
    ///   or a handle on a host that is not allowed, and then nothing is written.
    public func saveRegistration(_ registration: Registration, ifVersion: Int? = nil, mustExist: Bool = false) async throws -> Registration {
        try check(registration)
        return try await store.upsertRegistration(
            registration,
            when: RegistrationCondition(ifVersion: ifVersion, mustExist: mustExist, mustBeIssued: true)
        )
    }

    public func registration(id: String) async throws -> Registration? {
        try await store.registration(id: id)
    }

    /// Deletes a registration; `false` if there was none. With `ifVersion`, `412` unless the
    /// stored registration has that version.
    public func deleteRegistration(id: String, ifVersion: Int? = nil) async throws -> Bool {
        try await store.deleteRegistration(id: id, ifVersion: ifVersion, owner: nil)
    }

    /// One page of registrations ordered by id, strictly after `cursor` (see
    /// ``RegistrationStore/listRegistrations(_:after:limit:)``).
    public func registrations(_ filter: RegistrationFilter, after cursor: String?, limit: Int) async throws -> [Registration] {
        try await store.listRegistrations(filter, after: cursor, limit: limit)
    }

    /// The number of registrations, installations' included.
    public func registrationCount() async throws -> Int {
        try await store.registrationCount()
    }

    // MARK: Installations

    /// Creates or replaces an installation and the registrations it expands into.
    /// The installation is checked as a PUT checks it (``Installation/validated()``: its
    /// templates must render; its push channel on an allowed host), and nothing is written
    /// when it is not.
    public func saveInstallation(_ installation: Installation) async throws -> Installation {
        try await store.upsertInstallation(try checked(installation), ifVersion: nil)
    }

    /// The installation validated, its push channel checked against ``Configuration/channelHosts``.
    func checked(_ installation: Installation) throws -> Installation {
        let validated = try installation.validated()
        try configuration.channelHosts.check(validated.pushChannel, platform: validated.platform)
        return validated
    }

    public func installation(id: String) async throws -> Installation? {
        try await store.installation(id: id)
    }

    /// Applies a JSON Patch (the hub API's installation patch) to the stored installation.
    ///
    /// The write succeeds only if nobody wrote the installation since it was read; a
    /// concurrent writer makes it read and patch again, a few times at most. A patch that
    /// changes the push channel clears ``Installation/pushChannelExpired``.
    ///
    /// - Parameter check: Runs on the patched installation before it is written; what it
    ///   throws is thrown and nothing is written.
    /// - Throws: ``HeraldError`` `notFound` if there is no such installation, `badRequest` for
    ///   an invalid patch, `conflict` if the installation kept changing.
    public func patchInstallation(
        id: String, patch: Data, check: (Installation) throws -> Void = { _ in }
    ) async throws -> Installation {
        for _ in 0..<5 {
            guard let current = try await store.installation(id: id) else {
                throw HeraldError.notFound("no installation with id \(id) to patch; create it with PUT first")
            }
            var patched = try current.applying(patch)
            try check(patched)
            try configuration.channelHosts.check(patched.pushChannel, platform: patched.platform)
            patched.pushChannelExpired = patched.pushChannel == current.pushChannel ? current.pushChannelExpired : false
            do {
                return try await store.upsertInstallation(patched, ifVersion: current.version)
            } catch let error as StoreError where error.code == .versionMismatch {
                continue
            }
        }
        throw HeraldError.conflict("the installation kept changing while it was being patched; try again")
    }

    /// Deletes an installation and its registrations; `false` if there was none.
    @discardableResult
    public func deleteInstallation(id: String) async throws -> Bool {
        try await store.deleteInstallation(id: id)
    }

    /// One page of installations ordered by id, strictly after `cursor`: all, those of one
    /// user, those carrying a tag, or both.
    public func installations(userID: String?, tag: String?, after cursor: String?, limit: Int) async throws -> [Installation] {
        try await store.listInstallations(userId: userID, tag: tag, after: cursor, limit: limit)
    }
}
