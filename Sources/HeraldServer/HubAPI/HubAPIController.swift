public import Foundation
import HTTPTypes
import HeraldCore
public import HeraldHub
import HeraldHubWire
import HeraldStore
public import Hummingbird
import Logging

/// The hub REST API, wire-compatible with the established cloud notification hub's, so its
/// SDKs work unchanged against `https://host:port/{hub}/…`.
///
/// Every route authorizes a shared access signature (`Authorization: SharedAccessSignature
/// sr=…&sig=…&se=…&skn=…`) against the hub's rules, with the right the operation needs:
/// Listen for one device's registrations and installations, Send for notifications, Manage
/// for listings and export and import jobs. Errors come back as the hub's XML error document.
public struct HubAPIController: Sendable {
    let registry: HubRegistry
    /// `https` on the TLS listener, `http` on the plain one: the scheme of the URLs this
    /// API returns (`Location`, Atom ids).
    let scheme: String
    let limiter: HubRateLimiter
    let now: @Sendable () -> Date

    /// Registrations and installations listed per page at most.
    static let maxPageSize = 100
    /// The largest notification or registration body accepted.
    static let maxBodyBytes = 64 * 1024
    static let apiVersion = "2020-06"

    public init(registry: HubRegistry, scheme: String, requestsPerSecond: Int = 2000, now: @escaping @Sendable () -> Date = { Date() }) {
        self.init(registry: registry, scheme: scheme, limiter: HubRateLimiter(requestsPerSecond: requestsPerSecond), now: now)
    }

    /// With a rate limiter shared by the server's listeners.
    init(registry: HubRegistry, scheme: String, limiter: HubRateLimiter, now: @escaping @Sendable () -> Date) {
        self.registry = registry
        self.scheme = scheme
        self.limiter = limiter
        self.now = now
    }

    public func addRoutes(to router: Router<AppRequestContext>) {
        // Unmatched requests reach the router's not-found answer through its own middleware.
        router.add(middleware: HubNotFoundMiddleware())
        let hub = router.group("{hub}").add(middleware: HubErrorMiddleware())
        hub.post("registrationids", use: newRegistrationID)
        hub.post("registrations", use: createRegistration)
        hub.get("registrations", use: listRegistrations)
        hub.put("registrations/{id}", use: createOrUpdateRegistration)
        hub.get("registrations/{id}", use: getRegistration)
        hub.delete("registrations/{id}", use: deleteRegistration)
        hub.get("tags/{tag}/registrations", use: registrationsByTag)

        hub.get("installations", use: listInstallations)
        hub.put("installations/{id}", use: putInstallation)
        hub.get("installations/{id}", use: getInstallation)
        hub.patch("installations/{id}", use: patchInstallation)
        hub.delete("installations/{id}", use: deleteInstallation)

        hub.post("messages", use: send)
        hub.post("messages/$batch", use: sendBatch)
        hub.get("messages/{id}", use: notificationDetails)
        hub.post("receipts", use: confirmReceipt)
        hub.post("schedulednotifications", use: schedule)
        hub.delete("schedulednotifications/{id}", use: cancelScheduled)

        hub.post("jobs", use: submitJob)
        hub.get("jobs", use: listJobs)
        hub.get("jobs/{id}", use: getJob)
        hub.put("jobs/files/{name}", use: uploadJobFile)
        hub.get("jobs/files/{name}", use: downloadJobFile)
        hub.get("jobs/{id}/{file}", use: downloadJobOutput)

        hub.post("broadcastchannels", use: createBroadcastChannel)
        hub.get("broadcastchannels", use: listBroadcastChannels)
        hub.get("broadcastchannels/{id}", use: getBroadcastChannel)
        hub.delete("broadcastchannels/{id}", use: deleteBroadcastChannel)
        hub.get("broadcastchannels/{id}/messages", use: listChannelBroadcasts)
        addWebhookRoutes(to: hub)

        // What the cloud hub offers on its higher tiers and Herald answers otherwise.
        hub.get("feedbackcontainer", use: notOffered)
    }

    /// PNS feedback containers: a clear 404 saying what to use instead.
    @Sendable func notOffered(request: Request, context: AppRequestContext) async throws -> Response {
        _ = try await authorize(request, context: context, right: .manage)
        throw HeraldError.notFound(
            "Herald offers no feedback containers: each notification's outcome is at GET /{hub}/messages/{id}, and dead channels are removed as the push service reports them"
        )
    }

    // MARK: Authorization

    /// The hub a request addresses, once its signature is checked for `right`.
    func authorize(_ request: Request, context: AppRequestContext, right: AccessRight) async throws -> (name: String, engine: HubEngine) {
        let authorized = try await authorizeRequest(request, context: context, right: right)
        return (authorized.name, authorized.engine)
    }

    /// A request whose signature was checked: the hub's name, engine and definition, and the
    /// rule the request was signed with.
    struct AuthorizedRequest {
        var name: String
        var engine: HubEngine
        var definition: HubDefinition
        var rule: SharedAccessRule

        /// Refuses (403) tags that the hub reserves to keys with Send or Manage, when this
        /// request's key has neither.
        func checkTags(_ tags: some Sequence<String>) throws {
            guard !rule.rights.contains(.send), !rule.rights.contains(.manage), let tag = definition.reservedTag(in: tags) else { return }
            throw HeraldError.forbidden(
                "the tag '\(tag)' has a prefix that hub \(definition.name) reserves to keys with the Send or Manage right; rule \(rule.name) has Listen only"
            )
        }
    }

    func authorizeRequest(_ request: Request, context: AppRequestContext, right: AccessRight) async throws -> AuthorizedRequest {
        let name = try Self.pathParameter("hub", context)
        guard let header = request.headers[.authorization], !header.isEmpty else {
            throw HeraldError.unauthorized(
                "the Authorization header is missing; send 'SharedAccessSignature sr=…&sig=…&se=…&skn=…' made from one of the hub's keys"
            )
        }
        // One read of the hub's definition serves the check and the lookup of its engine.
        let (definition, rule) = try await registry.catalog.authorize(
            header: header, hub: name, requestURL: requestURL(request), right: right, now: now()
        )
        let caller: HubRateLimiter.Caller = rule.rights.contains(.send) || rule.rights.contains(.manage) ? .sendOrManage : .listen
        try limiter.admit(definition.name, caller: caller, nodes: registry.liveNodeCount)
        return AuthorizedRequest(name: name, engine: try await registry.engine(for: definition), definition: definition, rule: rule)
    }

    func host(_ request: Request) -> String {
        request.head.authority ?? "localhost"
    }

    func requestURL(_ request: Request) -> String {
        "\(scheme)://\(host(request))\(request.uri.path)"
    }

    /// `https://host:port/{hub}`: the base of the URLs this API hands out.
    func hubURL(_ request: Request, hub: String) -> String {
        "\(scheme)://\(host(request))/\(hub)"
    }

    // MARK: Registrations

    @Sendable func newRegistrationID(request: Request, context: AppRequestContext) async throws -> Response {
        let (name, engine) = try await authorize(request, context: context, right: .listen)
        let id = try await engine.issueRegistrationID()
        var headers = HTTPFields()
        headers[.location] = "\(hubURL(request, hub: name))/registrationids/\(id)?api-version=\(Self.apiVersion)"
        headers[.contentLength] = "0"
        return Response(status: .created, headers: headers)
    }

    @Sendable func createRegistration(request: Request, context: AppRequestContext) async throws -> Response {
        let authorized = try await authorizeRequest(request, context: context, right: .listen)
        let (name, engine) = (authorized.name, authorized.engine)
        let registration = try RegistrationDescription.parse(try await request.bodyData(limit: Self.maxBodyBytes))
        try authorized.checkTags(registration.tags)
        let saved = try await engine.createRegistration(registration)
        context.logger.debug("Created a registration", metadata: ["herald.platform": "\(saved.platform)"])
        return entryResponse(saved, request: request, hub: name)
    }

    @Sendable func createOrUpdateRegistration(request: Request, context: AppRequestContext) async throws -> Response {
        let authorized = try await authorizeRequest(request, context: context, right: .listen)
        let (name, engine) = (authorized.name, authorized.engine)
        let id = try registrationID(context)
        var registration = try RegistrationDescription.parse(try await request.bodyData(limit: Self.maxBodyBytes))
        try authorized.checkTags(registration.tags)
        if !registration.id.isEmpty, registration.id != id {
            throw HeraldError.badRequest("the RegistrationId in the body (\(registration.id)) differs from the one in the URL (\(id))")
        }
        registration.id = id
        let ifVersion = try Self.version(ifMatch: request.headers[.ifMatch])
        let saved: Registration
        do {
            saved = try await engine.saveRegistration(registration, ifVersion: ifVersion, mustExist: request.headers[.ifMatch] != nil)
        } catch let error as HeraldError where error.code == .gone {
            throw HeraldError.gone(
                "Cannot use specified location, use a different registrationid: \(id) was not issued by POST registrationids, or it expired or was deleted")
        }
        return entryResponse(saved, request: request, hub: name)
    }

    @Sendable func getRegistration(request: Request, context: AppRequestContext) async throws -> Response {
        let (name, engine) = try await authorize(request, context: context, right: .listen)
        let id = try registrationID(context)
        guard let registration = try await engine.registration(id: id), registration.installationID == nil else {
            throw HeraldError.notFound("no registration with id \(id)")
        }
        return entryResponse(registration, request: request, hub: name)
    }

    @Sendable func deleteRegistration(request: Request, context: AppRequestContext) async throws -> Response {
        let (_, engine) = try await authorize(request, context: context, right: .listen)
        let id = try registrationID(context)
        let ifVersion = try Self.version(ifMatch: request.headers[.ifMatch])
        guard try await engine.deleteRegistration(id: id, ifVersion: ifVersion) else {
            throw HeraldError.notFound("no registration with id \(id)")
        }
        return Response(status: .ok, headers: [.contentLength: "0"])
    }

    @Sendable func listRegistrations(request: Request, context: AppRequestContext) async throws -> Response {
        let filterText = request.formQuery("$filter")
        // Reading the registrations of one handle is a device's business (Listen); reading
        // them all is the backend's (Manage).
        let (name, engine) = try await authorize(request, context: context, right: filterText == nil ? .manage : .listen)
        var filters: [RegistrationFilter] = [RegistrationFilter()]
        if let filterText {
            let handle = try Self.handle(filter: filterText)
            filters = [RegistrationFilter(handle: handle)]
            // APNs tokens are kept in lowercase hex; SDKs send them as they got them.
            if handle.lowercased() != handle { filters.append(RegistrationFilter(handle: handle.lowercased())) }
            // The JavaScript SDK percent-encodes channel URIs and endpoints inside the filter.
            if let decoded = handle.percentDecoded(), decoded != handle { filters.append(RegistrationFilter(handle: decoded)) }
        }
        return try await feedResponse(engine: engine, name: name, filters: filters, request: request, title: "Registrations")
    }

    @Sendable func registrationsByTag(request: Request, context: AppRequestContext) async throws -> Response {
        let (name, engine) = try await authorize(request, context: context, right: .manage)
        let tag = try Self.pathParameter("tag", context)
        try Tag.validate(tag)
        return try await feedResponse(engine: engine, name: name, filters: [RegistrationFilter(tag: tag)], request: request, title: "Registrations")
    }

    private func feedResponse(engine: HubEngine, name: String, filters: [RegistrationFilter], request: Request, title: String) async throws -> Response {
        let top = try Self.top(request)
        let cursor = try request.formQuery("continuationtoken").map(ContinuationToken.decode)
        var page: [Registration] = []
        for filter in filters {
            page += try await engine.registrations(filter, after: cursor, limit: top)
        }
        page.sort { $0.id < $1.id }
        if page.count > top { page.removeLast(page.count - top) }
        let hubURL = hubURL(request, hub: name)
        let selfURL = "\(scheme)://\(host(request))\(request.uri.path)?api-version=\(Self.apiVersion)"
        var headers = HTTPFields()
        var nextURL: String?
        if page.count == top, let last = page.last {
            let token = ContinuationToken.encode(last.id)
            headers[HTTPField.Name("X-MS-ContinuationToken")!] = token
            nextURL = "\(scheme)://\(host(request))\(request.uri.path)?continuationtoken=\(token)&$top=\(top)&api-version=\(Self.apiVersion)"
        }
        let feed = RegistrationDescription.feed(page, hubURL: hubURL, selfURL: selfURL, nextURL: nextURL)
        return .xml(feed, contentType: "application/atom+xml;type=feed;charset=utf-8", headers: headers)
    }

    private func entryResponse(_ registration: Registration, request: Request, hub: String) -> Response {
        let hubURL = hubURL(request, hub: hub)
        var headers = HTTPFields()
        headers[.eTag] = #"W/"\#(registration.version)""#
        headers[.contentLocation] = "\(hubURL)/registrations/\(registration.id)?api-version=\(Self.apiVersion)"
        return .xml(
            RegistrationDescription.entry(registration, hubURL: hubURL),
            contentType: "application/atom+xml;type=entry;charset=utf-8",
            headers: headers
        )
    }

    /// A path parameter, percent-decoded (ids and tags may hold `#`, `@`, `:`).
    static func pathParameter(_ name: String, _ context: AppRequestContext) throws -> String {
        let raw = try context.parameters.require(name)
        guard let decoded = raw.percentDecoded() else {
            throw HeraldError.badRequest("malformed percent-encoding in the URL's \(name)")
        }
        return decoded
    }

    func registrationID(_ context: AppRequestContext) throws -> String {
        let id = try Self.pathParameter("id", context)
        guard RegistrationID.isWellFormed(id) else {
            throw HeraldError.badRequest("malformed registration id '\(id)': 1–128 letters, digits, '-', '_' or '.'")
        }
        return id
    }

    /// The version an `If-Match` asks for: `nil` for none or `*`; `"3"` and `W/"3"` are 3.
    static func version(ifMatch: String?) throws -> Int? {
        guard var value = ifMatch?.trimmingSpaces(), !value.isEmpty, value != "*" else { return nil }
        if value.hasPrefix("W/") { value.removeFirst(2) }
        value = value.trimmingCharacters(in: CharacterSet(charactersIn: "\""))
        guard let version = Int(value) else {
            throw HeraldError.badRequest("If-Match must be * or an ETag this hub returned, such as \"3\"")
        }
        return version
    }

    /// The handle of a `$filter` such as `ChannelUri eq 'https://…'` or `DeviceToken eq 'ABCD'`.
    static func handle(filter: String) throws -> String {
        let fields = ["ChannelUri", "DeviceToken", "GcmRegistrationId", "FcmV1RegistrationId", "FcmRegistrationId", "Endpoint"]
        let text = filter.trimmingSpaces()
        for field in fields {
            let prefix = "\(field) eq "
            guard text.count > prefix.count, text.lowercased().hasPrefix(prefix.lowercased()) else { continue }
            var value = text.dropFirst(prefix.count).trimmingSpaces()
            // The JavaScript SDK's browser filter goes on with `and P256DH eq '…' and Auth eq '…'`: the endpoint decides.
            if let and = value.range(of: "' and ", options: .caseInsensitive) { value = String(value[..<and.lowerBound]) + "'" }
            guard value.count >= 2, value.hasPrefix("'"), value.hasSuffix("'") else { break }
            value = String(value.dropFirst().dropLast()).replacingOccurrences(of: "''", with: "'")
            guard !value.isEmpty else { break }
            return value
        }
        throw HeraldError.badRequest(
            "unsupported $filter '\(filter)': use \(fields.map { "\($0) eq '…'" }.joined(separator: ", "))"
        )
    }

    static func top(_ request: Request) throws -> Int {
        guard let text = request.formQuery("$top") else { return maxPageSize }
        guard let top = Int(text), top > 0 else { throw HeraldError.badRequest("$top must be a positive number") }
        return min(top, maxPageSize)
    }
}

/// Continuation tokens: the last id of a page, base64url-encoded so it travels in a query.
enum ContinuationToken {
    static func encode(_ id: String) -> String {
        Data(id.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func decode(_ token: String) throws -> String {
        var base64 = token.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        guard let data = Data(base64Encoded: base64), let id = String(data: data, encoding: .utf8) else {
            throw HeraldError.badRequest("malformed continuationtoken: pass the X-MS-ContinuationToken of the previous page as it is")
        }
        return id
    }
}
