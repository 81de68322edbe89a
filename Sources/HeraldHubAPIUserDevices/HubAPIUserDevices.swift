import Crypto
package import Foundation
public import HeraldClient
public import HeraldCore
public import HeraldHub
package import HeraldHubWire

/// The app backend on a hub reached through the hub REST API: Herald's own hub API on
/// another server, or the established cloud hub.
///
/// ```swift
/// let client = try NotificationHubClient(connectionString: fullAccessConnectionString, hubName: "myhub")
/// let router = buildRouter(
///     hubs: registry, devices: HubAPIUserDevices(client: client), appStore: appStore, configuration: configuration, limits: limits
/// )
/// ```
///
/// Registrations are the hub's registrations (the app user is their `username:` tag, since
/// the hub keeps no owner). A send is one hub send per platform payload, then the hub's
/// telemetry is polled until every one of them ended or the wait is over, and reported as
/// one notification. The connection string needs the Listen, Send and Manage rights (the
/// default full-access rule has them).
public struct HubAPIUserDevices: UserDevices {
    public let client: NotificationHubClient
    public let platforms: Set<Platform>
    /// How often a send's telemetry is read while waiting for delivery to end.
    public let pollInterval: Duration

    /// - Parameters:
    ///   - client: the hub's client; its key needs Listen, Send and Manage.
    ///   - platforms: the platforms the hub delivers to: what a notify without `pns` is
    ///     rendered for.
    ///   - pollInterval: how often a send's telemetry is read while waiting.
    public init(client: NotificationHubClient, platforms: Set<Platform> = Set(Platform.allCases), pollInterval: Duration = .milliseconds(100)) {
        self.client = client
        self.platforms = platforms
        self.pollInterval = pollInterval
    }

    /// A new registration id from the hub (`POST registrationids`).
    public func newRegistrationID() async throws -> String {
        try await reaching { try await client.createRegistrationID() }
    }

    /// The user's registration of `handle` (the one made first; the user's others are
    /// deleted), or a new id. The hub keeps no owner: a registration is the user's when it
    /// carries their `username:` tag. Several calls to the hub, so two devices racing can
    /// both get new ids; the hub's own rules keep its registry consistent.
    public func registrationID(handle: String?, user: String) async throws -> String {
        guard let handle else { return try await newRegistrationID() }
        guard !handle.isEmpty else { throw HeraldError.badRequest("the handle query parameter is empty") }
        let mine = try await registrations(handle: handle)
            .filter { Self.user(of: $0) == user && $0.installationID == nil }
            .sorted { $0.createdAt < $1.createdAt }
        guard let first = mine.first else { return try await newRegistrationID() }
        try await deleteRegistrations(ids: mine.dropFirst().map(\.id))
        return first.id
    }

    /// Creates or replaces the user's registration, after checking that it is not another
    /// user's, then deletes the other registrations of the device. The hub's `410 Gone` for an
    /// id it no longer knows stays ``HeraldError/gone(_:)``, which the app backend passes on
    /// to the device.
    public func saveRegistration(_ registration: Registration, user: String) async throws -> Registration {
        let existing = try await reaching { try await client.registration(id: registration.id) }
        if let existing, Self.user(of: existing) != user {
            throw HeraldError.forbidden("this registration belongs to another user")
        }
        var saved = try await reaching { try await client.createOrUpdateRegistration(registration) }
        // The hub keeps no owner; the caller's is what the app backend set.
        saved.owner = user
        if existing?.handle != saved.handle || existing?.platform != saved.platform {
            let others = try await registrations(handle: saved.handle).filter {
                $0.platform == saved.platform && $0.id != saved.id && $0.installationID == nil
            }
            try await deleteRegistrations(ids: others.map(\.id))
        }
        return saved
    }

    public func deleteRegistration(id: String, user: String) async throws {
        guard let existing = try await reaching({ try await client.registration(id: id) }) else {
            throw HeraldError.notFound("no such registration")
        }
        guard Self.user(of: existing) == user else { throw HeraldError.forbidden("this registration belongs to another user") }
        try await deleteRegistrations(ids: [id])
    }

    /// Checks that the registration is the user's, then confirms for its device on the hub
    /// (`POST receipts` with its platform and push channel).
    public func confirm(_ notificationIDs: [String], registrationID: String, user: String) async throws {
        guard let existing = try await reaching({ try await client.registration(id: registrationID) }), Self.user(of: existing) == user else {
            throw HeraldError.notFound("no registration with id \(registrationID)")
        }
        try await reaching { try await client.acknowledge(notificationIDs, platform: existing.platform, pushChannel: existing.handle) }
    }

    /// The registrations of a handle on the hub, as stored (APNs tokens in lowercase too).
    func registrations(handle: String) async throws -> [Registration] {
        var found = try await reaching { try await client.registrations(channel: handle, top: 100) }
        let lower = handle.lowercased()
        if lower != handle { found += try await reaching { try await client.registrations(channel: lower, top: 100) } }
        return found
    }

    /// Deletes each registration; one that is already gone is skipped.
    func deleteRegistrations(ids: [String]) async throws {
        for id in ids {
            do {
                try await reaching { try await client.deleteRegistration(id: id) }
            } catch let error as HeraldError where error.code == .notFound {
                continue
            }
        }
    }

    /// The app-backend user a registration on the hub belongs to: its `username:` tag.
    static func user(of registration: Registration) -> String? {
        registration.tags.first { $0.hasPrefix("username:") }.map { String($0.dropFirst("username:".count)) }
    }

    /// Sends as the app backend does, native payloads to one user's devices (its `username:`
    /// tag), one hub send per payload; other requests are refused (`badRequest`). A send under
    /// an idempotency key sends each payload under a key of its own (``hubKey(for:platform:)``),
    /// so that a repeat reaches no device twice and the same key with another message is the
    /// hub's `422`.
    public func send(_ request: SendRequest, wait: Duration) async throws -> SendResult {
        guard case .user(let user) = request.target, case .native(let payloads) = request.content else {
            throw HeraldError.badRequest("a hub reached through its REST API takes the app backend's sends only: native payloads to one user's devices")
        }
        let tagExpression = "username:\(user)"
        let enqueuedAt = Date()
        var ids: [String] = []
        for payload in payloads {
            let notification = try Self.notification(for: payload)
            let key = request.options.idempotencyKey.map { Self.hubKey(for: $0, platform: payload.platform) }
            ids.append(try await reaching { try await client.send(notification, tagExpression: tagExpression, idempotencyKey: key) })
        }
        guard let first = ids.first else {
            throw HeraldError.badRequest("there is nothing to send: no platform payload")
        }
        var details: [String: NotificationDetails] = [:]
        let deadline = ContinuousClock.now.advanced(by: wait)
        while true {
            for id in ids where !(details[id].map { Self.isFinal($0.state) } ?? false) {
                details[id] = try await reaching { try await client.notificationDetails(id: id) }
            }
            let done = ids.allSatisfy { id in details[id].map { Self.isFinal($0.state) } ?? false }
            if done || ContinuousClock.now >= deadline { break }
            try await Task.sleep(for: min(pollInterval, deadline - ContinuousClock.now))
        }
        let merged = Self.merge(id: first, tagExpression: tagExpression, payloads: payloads, details: ids.compactMap { details[$0] }, enqueuedAt: enqueuedAt)
        return SendResult(record: merged, results: [])
    }

    // MARK: Helpers

    /// The hub's `Idempotency-Key` for the payload of `platform` of a send made under `key`:
    /// the hub's keys are the hub's, so a user's key, its scope and the platform are hashed
    /// into one (`herald-` and 64 hex digits), which no other user's send can take.
    package static func hubKey(for key: IdempotencyKey, platform: Platform) -> String {
        let digest = SHA256.hash(data: Data("\(key.scope)\u{1F}\(key.key)\u{1F}\(platform.rawValue)".utf8))
        return "herald-" + digest.lowercaseHex
    }

    /// The hub API form of a payload the app backend rendered.
    package static func notification(for payload: PlatformPayload) throws -> HubNotification {
        func headers(where keep: (String) -> Bool) -> [String: String] {
            var result: [String: String] = [:]
            for header in payload.headers where keep(header.name.lowercased()) { result[header.name] = header.value }
            return result
        }
        switch payload.platform {
        case .apns:
            return HubNotification(
                format: .apple, body: payload.body, contentType: HubNotification.jsonContentType,
                headers: headers { $0.hasPrefix("apns-") }
            )
        case .fcm:
            let message: JSONValue
            do {
                message = try JSONValue(parsing: payload.body)
            } catch {
                throw HeraldError.badRequest("the FCM payload is not a JSON message object")
            }
            return HubNotification.fcmV1(json: .object([("message", message)]))
        case .wns:
            let wnsHeaders = headers { $0.hasPrefix("x-wns-") }
            let isRaw = wnsHeaders.contains { $0.key.lowercased() == "x-wns-type" && $0.value.lowercased() == "wns/raw" }
            return HubNotification(
                format: .windows, body: payload.body, contentType: isRaw ? "application/octet-stream" : "application/xml",
                headers: wnsHeaders
            )
        case .webpush:
            return HubNotification(
                format: .browser, body: payload.body, contentType: HubNotification.jsonContentType,
                headers: headers { ["ttl", "urgency", "topic"].contains($0) }
            )
        }
    }

    /// Whether delivery of a notification in this state has ended.
    static func isFinal(_ state: NotificationState) -> Bool {
        switch state {
        case .completed, .abandoned, .noTargetFound, .cancelled: true
        case .enqueued, .processing, .scheduled: false
        }
    }

    /// How bad a state is when several sends are reported as one: a send that did not reach
    /// its end outweighs one that did, and a failure outweighs both.
    static func severity(_ state: NotificationState) -> Int {
        switch state {
        case .noTargetFound: 0
        case .completed: 1
        case .scheduled: 2
        case .enqueued: 3
        case .processing: 4
        case .cancelled: 5
        case .abandoned: 6
        }
    }

    /// One record for the sends of one notification: the first id, the counts summed, the
    /// worst state, the earliest start and, once every send ended, the latest end.
    package static func merge(
        id: String,
        tagExpression: String,
        payloads: [PlatformPayload],
        details: [NotificationDetails],
        enqueuedAt: Date
    ) -> NotificationRecord {
        var counts = OutcomeCounts()
        for item in details { counts.merge(item.counts) }
        let state = details.map(\.state).max { severity($0) < severity($1) } ?? .enqueued
        let ended = details.allSatisfy { isFinal($0.state) }
        return NotificationRecord(
            id: id,
            tagExpression: tagExpression,
            payloads: payloads,
            state: state,
            counts: counts,
            enqueuedAt: details.compactMap(\.enqueueTime).min() ?? enqueuedAt,
            startedAt: details.compactMap(\.startTime).min(),
            endedAt: ended ? details.compactMap(\.endTime).max() : nil
        )
    }

    /// Runs a call to the hub. The hub refusing this backend's key (401, 403), and a hub that
    /// cannot be reached, become ``HeraldError/unavailable(_:)``: the app backend then answers
    /// 503, not a 401 that the device would take for its own sign-in failing.
    func reaching<T>(_ call: () async throws -> T) async throws -> T {
        do {
            return try await call()
        } catch let error as HeraldError where error.code == .unauthorized || error.code == .forbidden {
            throw HeraldError.unavailable("the hub refused this backend's access key (\(error.code)): \(error.message)")
        } catch let error as HeraldError {
            throw error
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            throw HeraldError.unavailable("the hub at \(client.hubURL.host ?? "its endpoint") cannot be reached: \(error.localizedDescription)")
        }
    }
}
