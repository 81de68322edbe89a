import Foundation
public import HeraldCore

#if canImport(FoundationNetworking)
import FoundationNetworking
import HeraldHubWire
#endif

/// Registrations: one device's handle, tags and (for a template registration) template, in
/// the hub's Atom XML.
extension NotificationHubClient {
    static let entryContentType = "application/atom+xml;type=entry;charset=utf-8"

    /// Asks the hub for a new registration id, for a first ``createOrUpdateRegistration(_:)``.
    ///
    /// A backend that keeps one registration per device asks for the id once, stores it with
    /// the device, and upserts with it; when the hub answers `410 Gone` (the id expired or the
    /// registration was deleted), it asks for a new one. Needs the Listen right.
    public func createRegistrationID() async throws -> String {
        let request = makeRequest("POST", path: ["registrationids"], body: Data(), contentType: "application/xml")
        let (_, response) = try await perform(request, accepted: [200, 201])
        return try Self.locationID(response, what: "registration id request")
    }

    /// Creates a registration with an id the hub chooses, and returns it as stored (with its
    /// id, version and dates). `registration.id` is ignored. Needs the Listen right.
    public func createRegistration(_ registration: Registration) async throws -> Registration {
        var sent = registration
        sent.id = ""
        let request = makeRequest(
            "POST", path: ["registrations"], body: RegistrationDescription.request(sent), contentType: Self.entryContentType
        )
        return try Self.registration(from: try await perform(request))
    }

    /// Creates or replaces the registration with `registration.id` (an id from
    /// ``createRegistrationID()``, or one of an existing registration), and returns it as
    /// stored.
    ///
    /// - Throws: `HeraldError` `gone` (410) when the id was not issued by the hub or no
    ///   longer is valid: ask for a new one.
    public func createOrUpdateRegistration(_ registration: Registration) async throws -> Registration {
        try Self.checkRegistrationID(registration.id)
        let request = makeRequest(
            "PUT", path: ["registrations", registration.id], body: RegistrationDescription.request(registration),
            contentType: Self.entryContentType
        )
        return try Self.registration(from: try await perform(request))
    }

    /// Replaces an existing registration if it is still at `registration.version` (sent as
    /// `If-Match`), and returns it as stored.
    ///
    /// - Throws: `HeraldError` `preconditionFailed` (412) when someone changed it since it
    ///   was read, `notFound` (404) when it does not exist.
    public func updateRegistration(_ registration: Registration) async throws -> Registration {
        try Self.checkRegistrationID(registration.id)
        let request = makeRequest(
            "PUT", path: ["registrations", registration.id], headers: ["If-Match": "\"\(registration.version)\""],
            body: RegistrationDescription.request(registration), contentType: Self.entryContentType
        )
        return try Self.registration(from: try await perform(request))
    }

    /// The registration with this id, or `nil` if there is none.
    public func registration(id: String) async throws -> Registration? {
        try Self.checkRegistrationID(id)
        do {
            return try Self.registration(from: try await perform(makeRequest("GET", path: ["registrations", id]), accepted: [200]))
        } catch let error as HeraldError where error.code == .notFound {
            return nil
        }
    }

    /// The registrations of one device handle (APNs token, FCM token, WNS channel URI or Web
    /// Push endpoint), at most `top` of them. Needs only the Listen right.
    public func registrations(channel: String, top: Int = 100) async throws -> [Registration] {
        let quoted = "'" + channel.replacingOccurrences(of: "'", with: "''") + "'"
        let query = [(name: "$filter", value: "ChannelUri eq \(quoted)"), (name: "$top", value: String(try Self.checkTop(top)))]
        return try await page(path: ["registrations"], query: query).items
    }

    /// One page of the registrations with `tag`. Pass the page's ``Page/continuationToken``
    /// to read the next one. Needs the Manage right.
    public func registrations(tag: String, top: Int = 100, continuationToken: String? = nil) async throws -> Page<Registration> {
        try Tag.validate(tag)
        return try await page(path: ["tags", tag, "registrations"], query: Self.pageQuery(top: top, continuationToken: continuationToken))
    }

    /// One page of every registration of the hub, by id. Pass the page's
    /// ``Page/continuationToken`` to read the next one. Needs the Manage right.
    public func registrations(top: Int = 100, continuationToken: String? = nil) async throws -> Page<Registration> {
        try await page(path: ["registrations"], query: Self.pageQuery(top: top, continuationToken: continuationToken))
    }

    /// Deletes a registration; with `ifVersion`, only if it is still at that version.
    ///
    /// - Throws: `HeraldError` `notFound` (404) when there is no such registration,
    ///   `preconditionFailed` (412) when it changed since `ifVersion`.
    public func deleteRegistration(id: String, ifVersion: Int? = nil) async throws {
        try Self.checkRegistrationID(id)
        let ifMatch = ifVersion.map { "\"\($0)\"" } ?? "*"
        try await perform(makeRequest("DELETE", path: ["registrations", id], headers: ["If-Match": ifMatch]), accepted: [200, 204])
    }

    // MARK: Helpers

    private func page(path: [String], query: [(name: String, value: String)]) async throws -> Page<Registration> {
        let (data, response) = try await perform(makeRequest("GET", path: path, query: query), accepted: [200])
        let items = try RegistrationDescription.parseFeed(data)
        let token = response.value(forHTTPHeaderField: "X-MS-ContinuationToken").flatMap { $0.isEmpty ? nil : $0 }
        return Page(items: items, continuationToken: token)
    }

    static func pageQuery(top: Int, continuationToken: String?) throws -> [(name: String, value: String)] {
        var query = [(name: "$top", value: String(try checkTop(top)))]
        if let continuationToken { query.append((name: "continuationtoken", value: continuationToken)) }
        return query
    }

    static func checkTop(_ top: Int) throws -> Int {
        guard top > 0 else { throw HeraldError.badRequest("top must be at least 1; the hub returns at most 100 a page") }
        return top
    }

    static func checkRegistrationID(_ id: String) throws {
        guard RegistrationID.isWellFormed(id) else {
            throw HeraldError.badRequest(
                "'\(id)' is not a registration id: 1–128 letters, digits, '-', '_' or '.'; get one from createRegistrationID()"
            )
        }
    }

    /// The entry the hub answered with; the `ETag` header gives the version when the entry
    /// does not.
    static func registration(from answer: (data: Data, response: HTTPURLResponse)) throws -> Registration {
        var registration = try RegistrationDescription.parseEntry(answer.data)
        if let version = version(etag: answer.response.value(forHTTPHeaderField: "ETag")) {
            registration.version = version
        }
        return registration
    }
}
