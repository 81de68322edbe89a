import Foundation
public import HeraldCore

#if canImport(FoundationNetworking)
import FoundationNetworking
import HeraldHubWire
#endif

/// Installations: one JSON document per app install, with its user, tags and named
/// templates.
extension NotificationHubClient {
    /// Creates the installation, or replaces the one with its id. A replaced installation's
    /// `pushChannelExpired` is cleared. Needs the Listen right.
    public func createOrUpdateInstallation(_ installation: Installation) async throws {
        try Self.checkInstallationID(installation.id)
        let request = makeRequest(
            "PUT", path: ["installations", installation.id], body: installation.wireJSON(), contentType: "application/json"
        )
        try await perform(request, accepted: [200, 201, 204])
    }

    /// The installation with this id, or `nil` if there is none. Its `version` comes from the
    /// answer's `ETag`; `pushChannelExpired` and `updatedAt` (the wire's `lastUpdate`) are
    /// read too.
    public func installation(id: String) async throws -> Installation? {
        try Self.checkInstallationID(id)
        let answer: (data: Data, response: HTTPURLResponse)
        do {
            answer = try await perform(makeRequest("GET", path: ["installations", id]), accepted: [200])
        } catch let error as HeraldError where error.code == .notFound {
            return nil
        }
        var installation = try Self.decodeInstallation(answer.data)
        if let version = Self.version(etag: answer.response.value(forHTTPHeaderField: "ETag")) {
            installation.version = version
        }
        return installation
    }

    /// Changes parts of an installation with JSON Patch operations, applied in order and all
    /// or none. Needs the Listen right.
    ///
    /// - Throws: `HeraldError` `notFound` (404) when there is no such installation,
    ///   `badRequest` (400) naming an operation the hub refuses.
    public func patchInstallation(id: String, _ operations: [InstallationPatchOperation]) async throws {
        try Self.checkInstallationID(id)
        guard !operations.isEmpty else { return }
        let body = HubNotification.encode(.array(operations.map(\.json)))
        let request = makeRequest(
            "PATCH", path: ["installations", id], body: body, contentType: "application/json-patch+json"
        )
        try await perform(request, accepted: [200, 204])
    }

    /// Deletes the installation and the registrations derived from it; deleting one that does
    /// not exist succeeds too. Needs the Listen right.
    public func deleteInstallation(id: String) async throws {
        try Self.checkInstallationID(id)
        try await perform(makeRequest("DELETE", path: ["installations", id]), accepted: [200, 202, 204])
    }

    /// One page of installations, by id: all of them, those of one user, those with one tag,
    /// or those of one user with one tag. Pass the page's ``Page/continuationToken`` to read
    /// the next one. Needs the Manage right.
    ///
    /// The installations' `version` is not part of a listing (it stays 1); read one with
    /// ``installation(id:)`` for it.
    public func installations(
        userId: String? = nil,
        tag: String? = nil,
        top: Int = 100,
        continuationToken: String? = nil
    ) async throws -> Page<Installation> {
        var query: [(name: String, value: String)] = []
        if let userId { query.append((name: "userId", value: userId)) }
        if let tag {
            try Tag.validate(tag)
            query.append((name: "tag", value: tag))
        }
        query += try Self.pageQuery(top: top, continuationToken: continuationToken)
        let (data, response) = try await perform(makeRequest("GET", path: ["installations"], query: query), accepted: [200])
        let documents: [JSONValue]
        do {
            documents = try JSONDecoder().decode([JSONValue].self, from: data)
        } catch {
            throw HeraldError(code: .internalError, message: "the hub's list of installations is not a JSON array")
        }
        var items: [Installation] = []
        for document in documents {
            items.append(try Self.decodeInstallation(HubNotification.encode(document)))
        }
        let token = response.value(forHTTPHeaderField: "X-MS-ContinuationToken").flatMap { $0.isEmpty ? nil : $0 }
        return Page(items: items, continuationToken: token)
    }

    /// An installation as the hub returned it, read-only fields included.
    static func decodeInstallation(_ data: Data) throws -> Installation {
        do {
            return try JSONDecoder().decode(Installation.self, from: data)
        } catch let error as HeraldError {
            throw HeraldError(code: .internalError, message: "the hub returned an installation this client cannot read: \(error.message)")
        } catch {
            throw HeraldError(code: .internalError, message: "the hub returned an installation that is not valid JSON")
        }
    }

    static func checkInstallationID(_ id: String) throws {
        guard Installation.isWellFormedID(id) else {
            throw HeraldError.badRequest("'\(id)' is not an installation id: 1–200 letters, digits and - _ @ # . : =")
        }
    }
}
