import Foundation
import HeraldCore
public import HeraldHub
public import HeraldStore
public import Hummingbird
import Logging

/// Rich push: content (an image, a sound, a link…) that the device fetches by id.
///
/// - `POST /api/rich` with the content as the body and its media type as `Content-Type` →
///   `201 {"id", "type", "size"}` (``RichUpload``). Only ``ServerConfiguration/richMediaTypes``
///   are accepted (415 otherwise); more than ``ServerConfiguration/richMaxBytes`` gets 413,
///   checked while the body arrives. The bytes are kept in the store with the metadata, so
///   that every node sharing the store serves them.
/// - `POST /api/notifications/rich?to_tag=<user>[&pns=…][&style=silent|alert]` with
///   `{"richId", "message"}` → the uploader (only) sends it; the recipient may then read it.
///   Answers like `POST /api/notifications`, plus `"richId"`. See ``RichNotification`` for
///   the payloads: `richType` is `img` for a picture, as the tutorial's device code expects.
/// - `GET /api/notifications/{id}` of a rich content's id (``ContentController``) → the bytes,
///   with their `Content-Type`, to the uploader and the users it was sent to; 404 to everyone
///   else. `GET /api/rich/{id}` is a deprecated alias of it, for apps built with an earlier
///   SDK.
///
/// Ids are ``ContentID``s of the rich kind. Without ``ServerConfiguration/richPushEnabled``
/// these answer 503.
public struct RichPushController: Sendable {
    let store: any ContentStore
    let devices: any UserDevices
    let configuration: ServerConfiguration

    public init(store: any ContentStore, devices: any UserDevices, configuration: ServerConfiguration) {
        self.store = store
        self.devices = devices
        self.configuration = configuration
    }

    public func addRoutes(to group: RouterGroup<AppRequestContext>) {
        group.post("rich", use: upload)
        group.get("rich/{id}", use: fetchDeprecated)
        group.post("notifications/rich", use: send)
    }

    private func checkEnabled() throws {
        guard configuration.richPushEnabled else {
            throw HeraldError.unavailable("rich push is not enabled on this server")
        }
    }

    private static let notFound = HeraldError.notFound("no such rich content")

    // MARK: Upload

    @Sendable func upload(request: Request, context: AppRequestContext) async throws -> Response {
        let user = try context.requireUser()
        try checkEnabled()
        guard let contentType = request.headers[.contentType] else {
            throw HeraldError(code: .unsupportedMediaType, message: "send the content's media type as Content-Type")
        }
        let mediaType = Self.mediaType(contentType)
        guard configuration.richMediaTypes.contains(mediaType) else {
            throw HeraldError(
                code: .unsupportedMediaType,
                message: "rich content of type '\(mediaType)' is not accepted; use one of \(configuration.richMediaTypes.sorted().joined(separator: ", "))"
            )
        }
        let limit = configuration.richMaxBytes
        if let length = request.headers[.contentLength].flatMap({ Int($0) }), length > limit {
            throw HeraldError.payloadTooLarge("the content is larger than the \(limit) bytes this server accepts")
        }
        let bytes = try await Self.collect(request.body, limit: limit)
        let size = bytes.count
        let now = configuration.now()
        let id = try await ContentID.save(.rich, random: configuration.contentIDRandom) { id in
            let content = RichContent(
                id: id,
                owner: user,
                mediaType: mediaType,
                size: size,
                createdAt: now,
                expiresAt: now.addingTimeInterval(configuration.richRetention.seconds)
            )
            try await store.saveRichContent(content, bytes: bytes)
        }
        context.logger.debug("Rich content stored", metadata: ["herald.rich.id": "\(id)", "herald.rich.size": "\(size)"])
        return try .json(RichUpload(id: id, type: mediaType, size: size), status: .created)
    }

    /// The whole body, refused with `413` as soon as more than `limit` bytes arrived (whatever
    /// the declared length), and with `400` when empty.
    static func collect<Body: AsyncSequence>(_ body: Body, limit: Int) async throws -> Data where Body.Element == ByteBuffer {
        var collected = ByteBuffer()
        for try await chunk in body {
            guard collected.readableBytes + chunk.readableBytes <= limit else {
                throw HeraldError.payloadTooLarge("the content is larger than the \(limit) bytes this server accepts")
            }
            collected.writeImmutableBuffer(chunk)
        }
        guard collected.readableBytes > 0 else { throw HeraldError.badRequest("the request body is empty; send the content") }
        return Data(collected.readableBytesView)
    }

    /// `image/PNG; charset=…` → `image/png`.
    static func mediaType(_ contentType: String) -> String {
        let base = contentType.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        return base.trimmingSpaces().lowercased()
    }

    // MARK: Fetch

    /// `GET /api/rich/{id}`: what `GET /api/notifications/{id}` answers for rich content, kept
    /// for apps built with an earlier SDK.
    @Sendable func fetchDeprecated(request: Request, context: AppRequestContext) async throws -> Response {
        let user = try context.requireUser()
        try checkEnabled()
        let id = try context.parameters.require("id")
        guard ContentID.kinds(of: id).contains(.rich), let response = try await read(id: id, user: user, context: context) else {
            throw ContentController.notFound
        }
        return response
    }

    /// The rich content `id` as `user` reads it; `nil` when `user` may not read it: not its
    /// uploader nor a user it was sent to, unknown or expired.
    func read(id: String, user: String, context: AppRequestContext) async throws -> Response? {
        try checkEnabled()
        guard let content = try await store.readableRichContent(id: id, username: user, now: configuration.now()) else {
            return nil
        }
        guard let bytes = try await store.richContentBytes(id: id) else {
            context.logger.warning("Rich content has no bytes", metadata: ["herald.rich.id": "\(id)"])
            return nil
        }
        return Response(
            status: .ok,
            headers: [
                .contentType: content.mediaType,
                .cacheControl: "private, no-store",
                .xContentTypeOptions: "nosniff",
                .contentSecurityPolicy: "default-src 'none'; sandbox",
            ],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes))
        )
    }

    // MARK: Send

    @Sendable func send(request: Request, context: AppRequestContext) async throws -> Response {
        let user = try context.requireUser()
        try checkEnabled()
        let target = try NotifyTarget(request: request, platforms: devices.platforms)
        let style = try request.uri.queryParameters.get("style").map { try RichNotificationStyle(parsing: $0) } ?? .silent
        let body = try await request.decodeJSONBody(context: context)
        guard let richID = Self.richID(body.member("richId")), let message = body.member("message")?.stringValue else {
            throw HeraldError.badRequest(#"send {"richId": "<id from POST /api/rich>", "message": "…"}"#)
        }
        // Only the uploader may send it; to anyone else it does not exist.
        guard ContentID.kinds(of: richID).contains(.rich),
            let content = try await store.richContent(id: richID, now: configuration.now()),
            content.owner == user
        else { throw Self.notFound }

        let rich = RichNotification(
            id: richID,
            contentType: content.mediaType,
            message: message,
            url: style == .alert ? contentURL(id: richID, request: request) : nil,
            style: style
        )
        let payloads = try target.platforms.map { try rich.payload(for: $0) }
        let keyed = try target.withIdempotencyKey(of: request, user: user, body: body)
        try await store.addRichRecipient(id: richID, username: target.recipient)
        let (sent, status) = try await keyed.send(payloads, devices: devices, wait: configuration.notifyWait, logger: context.logger)
        return try Response.json(
            ContentNotificationView(summary: NotificationSummary(sent.record), key: NotificationDataKey.richID, contentID: richID),
            status: status
        ).markedReplayed(sent.replay != nil)
    }

    /// `richId` as a string, or as a JSON number (an integer), as a backend may send the id
    /// it was given.
    static func richID(_ value: JSONValue?) -> String? {
        switch value {
        case .string(let id): id
        case .number(let number) where number >= 1 && number <= Double(Int32.max) && number.rounded() == number:
            String(Int32(number))
        default: nil
        }
    }

    /// The absolute URL of the content: ``ServerConfiguration/publicURL`` if set, else built
    /// from the request's `Host` (when it is a plain host name or address), else from the
    /// configured host and port.
    func contentURL(id: String, request: Request) -> String {
        var base: String
        if let publicURL = configuration.publicURL, !publicURL.isEmpty {
            base = publicURL
        } else if let authority = request.head.authority, Self.isPlainAuthority(authority) {
            base = "http://" + authority
        } else {
            base = "http://\(configuration.host):\(configuration.port)"
        }
        while base.hasSuffix("/") { base.removeLast() }
        return base + "/api/notifications/" + id
    }

    /// A host name or address with an optional port, nothing else.
    static func isPlainAuthority(_ authority: String) -> Bool {
        (1...255).contains(authority.utf8.count)
            && authority.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "-"), UInt8(ascii: ":"),
                    UInt8(ascii: "["), UInt8(ascii: "]"):
                    true
                default: false
                }
            }
    }
}
