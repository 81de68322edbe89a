import Foundation
import HTTPTypes
import HeraldCore
import HeraldHub
import HeraldHubWire
import Hummingbird
import Logging
import NIOCore

/// Sends: native or template, to tags, to everyone, to handles directly, as a test, or at a
/// scheduled time; and what became of each.
extension HubAPIController {
    @Sendable func send(request: Request, context: AppRequestContext) async throws -> Response {
        let authorized = try await authorizeRequest(request, context: context, right: .send)
        let (name, engine) = (authorized.name, authorized.engine)
        let format = try HubFormat(parsing: request.header("ServiceBusNotification-Format"))
        try Self.checkContentType(request.headers[.contentType], format: format, wnsType: request.header("X-WNS-Type"))
        let body = try await request.bodyData(limit: Self.maxBodyBytes)
        let tags = try Self.tagExpression(request.header("ServiceBusNotification-Tags"))
        var options = try Self.options(request)
        options.idempotencyKey = try Self.idempotencyKey(request, authorized, body: body)

        if let channel = request.header("apns-channel-id") {
            // A broadcast: one request to APNs for every device on the channel.
            guard case .native(.apns, _) = format else {
                throw HeraldError.badRequest("apns-channel-id goes with ServiceBusNotification-Format apple: broadcast channels are APNs'")
            }
            guard tags == nil, !request.hasQueryFlag("direct"), !request.hasQueryFlag("test") else {
                throw HeraldError.badRequest("a broadcast goes to the channel's devices: it takes no tags and is neither direct nor a test")
            }
            guard options.idempotencyKey == nil, options.scheduledAt == nil else {
                throw HeraldError.badRequest("a broadcast is sent at once: it cannot be scheduled and takes no Idempotency-Key")
            }
            let payload = try nativePayload(platform: .apns, legacyGCM: false, body: body, request: request)
                .removingHeader("apns-channel-id")
            let record = try await engine.broadcast(payload, toChannel: channel, options: options)
            return accepted(SendResult(record: record, results: []), request: request, hub: name, context: context)
        }

        if request.hasQueryFlag("direct") {
            guard case .native(let platform, let legacyGCM) = format else {
                throw HeraldError.badRequest("a direct send carries a native payload: format template cannot be sent directly")
            }
            guard let handle = request.header("ServiceBusNotification-DeviceHandle"), !handle.isEmpty else {
                throw HeraldError.badRequest("a direct send needs the ServiceBusNotification-DeviceHandle header")
            }
            let payload = try nativePayload(platform: platform, legacyGCM: legacyGCM, body: body, request: request)
            let target = Self.directTarget(platform: platform, handle: handle, auth: request.header("Auth"), p256dh: request.header("P256DH"))
            let sent = try await engine.send(SendRequest(target: .devices([target]), content: .native([payload]), options: options))
            return accepted(sent, request: request, hub: name, context: context)
        }

        let content = try content(format: format, body: body, request: request)

        if request.hasQueryFlag("test") || request.header("ServiceBusNotification-TestSend")?.lowercased() == "true" {
            let result = try await engine.send(
                SendRequest(target: .test(tags, limit: SendRequest.testLimit), content: content, options: options)
            )
            let outcome = NotificationOutcome(
                success: result.results.filter { $0.outcome == .success }.count,
                failure: result.results.filter { $0.outcome != .success }.count,
                results: result.results.map { item in
                    NotificationOutcome.Result(
                        platform: HubFormat.native(item.registration.platform, legacyGCM: item.registration.legacyGCM).name,
                        pnsHandle: item.registration.handle,
                        registrationId: item.registration.id,
                        outcome: item.outcome.rawValue
                    )
                }
            )
            var headers = HTTPFields()
            headers[.location] = location(result.record.id, request: request, hub: name)
            return .xml(outcome.xml(), status: .created, headers: headers)
        }

        let sent = try await engine.send(SendRequest(target: .tags(tags), content: content, options: options))
        return accepted(sent, request: request, hub: name, context: context)
    }

    /// `POST /{hub}/messages/$batch?direct`: one payload to up to 1000 handles, as
    /// `multipart/mixed` with a `notification` part and a `devices` part (a JSON array).
    @Sendable func sendBatch(request: Request, context: AppRequestContext) async throws -> Response {
        let authorized = try await authorizeRequest(request, context: context, right: .send)
        let (name, engine) = (authorized.name, authorized.engine)
        guard case .native(let platform, let legacyGCM) = try HubFormat(parsing: request.header("ServiceBusNotification-Format")) else {
            throw HeraldError.badRequest("a batch send carries a native payload: format template cannot be sent directly")
        }
        let body = try await request.bodyData(limit: Self.maxBodyBytes + 128 * 1024)
        let parts = try MultipartBody(contentType: request.headers[.contentType], body: body)
        guard let notification = parts.part(named: "notification") else {
            throw HeraldError.badRequest(#"the batch has no part with Content-Disposition: inline; name="notification""#)
        }
        guard let devices = parts.part(named: "devices") else {
            throw HeraldError.badRequest(#"the batch has no part with Content-Disposition: inline; name="devices" (a JSON array of handles)"#)
        }
        guard notification.body.count <= Self.maxBodyBytes else {
            throw HeraldError.payloadTooLarge("the notification is larger than the hub accepts (64 KB)")
        }
        let payload = try nativePayload(platform: platform, legacyGCM: legacyGCM, body: notification.body, request: request)
        let targets = try Self.batchTargets(platform: platform, devices: devices.body)
        var options = try Self.options(request)
        // The parts, not the multipart body: its boundary is any client's choice.
        options.idempotencyKey = try Self.idempotencyKey(request, authorized, body: Self.lengthPrefixed([notification.body, devices.body]))
        let sent = try await engine.send(SendRequest(target: .devices(targets), content: .native([payload]), options: options))
        return accepted(sent, request: request, hub: name, context: context)
    }

    @Sendable func schedule(request: Request, context: AppRequestContext) async throws -> Response {
        let authorized = try await authorizeRequest(request, context: context, right: .send)
        let (name, engine) = (authorized.name, authorized.engine)
        // Ignoring `?direct` here would turn a send meant for one handle into a broadcast.
        guard !request.hasQueryFlag("direct") else {
            throw HeraldError.badRequest(
                "a scheduled send cannot be direct: schedule a send to a tag such as $InstallationId:{id}, or send directly without a schedule"
            )
        }
        let format = try HubFormat(parsing: request.header("ServiceBusNotification-Format"))
        try Self.checkContentType(request.headers[.contentType], format: format, wnsType: request.header("X-WNS-Type"))
        guard let timeText = request.header("ServiceBusNotification-ScheduleTime") else {
            throw HeraldError.badRequest("ServiceBusNotification-ScheduleTime is required (UTC, yyyy-MM-ddTHH:mm:ss)")
        }
        let at = try Self.scheduleTime(timeText)
        let body = try await request.bodyData(limit: Self.maxBodyBytes)
        let tags = try Self.tagExpression(request.header("ServiceBusNotification-Tags"))
        let content = try content(format: format, body: body, request: request)
        var options = try Self.options(request, scheduledAt: at)
        options.idempotencyKey = try Self.idempotencyKey(request, authorized, body: body)
        let sent = try await engine.send(SendRequest(target: .tags(tags), content: content, options: options))
        let record = sent.record
        context.logger.info(
            sent.replay == nil ? "Notification scheduled" : "Scheduled notification replayed", metadata: ["herald.notification.id": "\(record.id)"])
        var headers = HTTPFields()
        headers[.location] = "\(hubURL(request, hub: name))/schedulednotifications/\(record.id)?api-version=\(Self.apiVersion)"
        headers[.contentLength] = "0"
        return Response(status: .created, headers: headers).markedReplayed(sent.replay != nil)
    }

    @Sendable func cancelScheduled(request: Request, context: AppRequestContext) async throws -> Response {
        let (_, engine) = try await authorize(request, context: context, right: .send)
        let id = try Self.pathParameter("id", context)
        guard try await engine.cancelScheduled(id: id) else {
            throw HeraldError.notFound("no scheduled notification with id \(id)")
        }
        return Response(status: .ok, headers: [.contentLength: "0"])
    }

    @Sendable func notificationDetails(request: Request, context: AppRequestContext) async throws -> Response {
        let (name, engine) = try await authorize(request, context: context, right: .send)
        let id = try Self.pathParameter("id", context)
        guard let record = try await engine.notification(id: id) else {
            throw HeraldError.notFound("no notification with id \(id)")
        }
        var details = NotificationDetails(record, location: location(id, request: request, hub: name))
        details.confirmed = try await engine.confirmedCounts(notificationID: id)
        return .xml(details.xml())
    }

    // MARK: Helpers

    /// What a send to tags carries: the native payload, or the template send's properties
    /// (and the one template to use, `ServiceBusNotification-TemplateName`).
    private func content(format: HubFormat, body: Data, request: Request) throws -> SendRequest.Content {
        switch format {
        case .native(let platform, let legacyGCM):
            return .native([try nativePayload(platform: platform, legacyGCM: legacyGCM, body: body, request: request)])
        case .template:
            return .template(
                TemplateSend(
                    properties: try Self.templateProperties(body),
                    templateName: request.header("ServiceBusNotification-TemplateName")
                )
            )
        }
    }

    /// `201 Created` with the notification's `Location`; for a send repeated under its
    /// idempotency key, the first one's, marked `Idempotent-Replayed: true`.
    private func accepted(_ sent: SendResult, request: Request, hub: String, context: AppRequestContext) -> Response {
        let record = sent.record
        context.logger.info(sent.replay == nil ? "Notification accepted" : "Notification replayed", metadata: ["herald.notification.id": "\(record.id)"])
        var headers = HTTPFields()
        headers[.location] = location(record.id, request: request, hub: hub)
        headers[.contentLength] = "0"
        return Response(status: .created, headers: headers).markedReplayed(sent.replay != nil)
    }

    /// `parts` one after the other, each after its length (8 bytes, big-endian): no two lists
    /// of parts give the same bytes.
    static func lengthPrefixed(_ parts: [Data]) -> Data {
        var joined = Data()
        for part in parts {
            withUnsafeBytes(of: UInt64(part.count).bigEndian) { joined.append(contentsOf: $0) }
            joined.append(part)
        }
        return joined
    }

    /// The request's `Idempotency-Key` in the hub's scope, kept for the hub's retention.
    static func idempotencyKey(_ request: Request, _ authorized: AuthorizedRequest, body: Data) throws -> IdempotencyKey? {
        try request.idempotencyKey(
            scope: IdempotencyKey.hubScope, body: body,
            retention: authorized.definition.idempotencyRetention ?? IdempotencyKey.defaultRetention
        )
    }

    func location(_ id: String, request: Request, hub: String) -> String {
        "\(hubURL(request, hub: hub))/messages/\(id)?api-version=\(Self.apiVersion)"
    }

    /// The request's native body and push-service headers as Herald's payload.
    private func nativePayload(platform: Platform, legacyGCM: Bool, body: Data, request: Request) throws -> PlatformPayload {
        let headers = request.headers.compactMap { field -> PlatformPayload.Header? in
            let name = field.name.canonicalName
            guard
                name.hasPrefix("apns-") || name.hasPrefix("x-wns-") || name == "x-apns-priority"
                    || name == "servicebusnotification-apns-expiry" || name == "ttl" || name == "urgency" || name == "topic"
            else { return nil }
            return PlatformPayload.Header(name: field.name.rawName, value: field.value)
        }
        return try PlatformPayload.hubNative(platform: platform, legacyGCM: legacyGCM, body: body, headers: headers)
    }

    /// How the request asks its notification to be delivered: `ServiceBusNotification-TimeToLive`
    /// (seconds) and `-Urgency`, which some clients send, Herald's `-Priority` (high, normal,
    /// low), `-CollapseId` and `-Spread` (seconds), and the scheduled time.
    static func options(_ request: Request, scheduledAt: Date? = nil) throws -> SendRequest.Options {
        var options = SendRequest.Options(scheduledAt: scheduledAt, urgency: request.header("ServiceBusNotification-Urgency"))
        if let text = request.header("ServiceBusNotification-TimeToLive") {
            guard let seconds = Int(text.trimmingSpaces()), seconds >= 0 else {
                throw HeraldError.badRequest("ServiceBusNotification-TimeToLive is a number of seconds, not '\(text)'")
            }
            options.timeToLive = .seconds(seconds)
        }
        if let text = request.header("ServiceBusNotification-Priority") {
            do {
                options.priority = try SendRequest.Priority(parsing: text)
            } catch {
                throw HeraldError.badRequest("ServiceBusNotification-Priority is high, normal or low, not '\(text)'")
            }
        }
        options.collapseID = request.header("ServiceBusNotification-CollapseId")
        if let text = request.header("ServiceBusNotification-Spread") {
            guard let seconds = Int(text.trimmingSpaces()) else {
                throw HeraldError.badRequest("ServiceBusNotification-Spread is a number of seconds to spread the sends over, not '\(text)'")
            }
            options.spread = .seconds(seconds)
        }
        return options
    }

    /// The `ServiceBusNotification-Tags` header as a tag expression: an expression as it is,
    /// or a comma-separated list of tags, which targets any of them.
    static func tagExpression(_ header: String?) throws -> SendRequest.Tags? {
        guard let header = header?.trimmingSpaces(), !header.isEmpty else { return nil }
        let expression: String
        if header.contains(","), !header.contains("&&"), !header.contains("||"), !header.contains("!"), !header.contains("(") {
            expression = header.split(separator: ",").map { $0.trimmingSpaces() }.joined(separator: " || ")
        } else {
            expression = header
        }
        do {
            return try SendRequest.Tags(parsing: expression)
        } catch {
            throw error.heraldError
        }
    }

    /// A template send's body: a flat JSON object of string values.
    static func templateProperties(_ body: Data) throws -> [String: String] {
        let value: Any
        do {
            value = try JSONSerialization.jsonObject(with: body)
        } catch {
            throw HeraldError.badRequest(#"a template notification's body is a JSON object of properties, such as {"message": "Hello"}"#)
        }
        guard let object = value as? [String: Any] else {
            throw HeraldError.badRequest(#"a template notification's body is a JSON object of properties, such as {"message": "Hello"}"#)
        }
        var properties: [String: String] = [:]
        for (key, value) in object {
            switch value {
            case let text as String: properties[key] = text
            case let number as NSNumber: properties[key] = number.stringValue
            default:
                throw HeraldError.badRequest("template property '\(key)' must be a string or a number")
            }
        }
        return properties
    }

    /// A direct send's device as the request names it: its handle, and for a browser the
    /// subscription's keys. The engine checks and normalizes it with the send's other devices.
    static func directTarget(platform: Platform, handle: String, auth: String?, p256dh: String?) -> DirectTarget {
        var keys: WebPushKeys?
        if platform == .webpush, let auth, let p256dh, !auth.isEmpty, !p256dh.isEmpty {
            keys = WebPushKeys(p256dh: p256dh, auth: auth)
        }
        return DirectTarget(platform: platform, handle: handle, webPushKeys: keys)
    }

    /// The `devices` part: handles as strings, or for browsers `{"endpoint", "p256dh", "auth"}` objects.
    static func batchTargets(platform: Platform, devices: Data) throws -> [DirectTarget] {
        guard let items = try? JSONSerialization.jsonObject(with: devices) as? [Any] else {
            throw HeraldError.badRequest("the devices part is a JSON array of device handles")
        }
        return try items.map { item in
            if let handle = item as? String {
                return directTarget(platform: platform, handle: handle, auth: nil, p256dh: nil)
            }
            if let object = item as? [String: Any], let endpoint = object["endpoint"] as? String {
                let keys = object["keys"] as? [String: Any] ?? object
                return directTarget(platform: platform, handle: endpoint, auth: keys["auth"] as? String, p256dh: keys["p256dh"] as? String)
            }
            throw HeraldError.badRequest("each device of a batch is a handle string (or a browser subscription object)")
        }
    }

    /// Refuses (400) a body whose declared type the format does not take: JSON formats
    /// (`apple`, `fcmv1`, `gcm`, `browser`, `template`) take `application/json` (or `text/json`,
    /// `application/*+json`, `text/plain`); `windows` toast, tile and badge take XML
    /// (`application/xml`, `text/xml`, `application/*+xml`); WNS raw (`X-WNS-Type: wns/raw`) takes
    /// any bytes, `application/octet-stream` as the SDKs send it. A request without a
    /// `Content-Type` is read as the format says.
    static func checkContentType(_ contentType: String?, format: HubFormat, wnsType: String?) throws {
        guard let contentType, let mediaType = contentType.split(separator: ";").first?.trimmingSpaces().lowercased(),
            !mediaType.isEmpty
        else { return }
        switch format {
        case .native(.wns, _):
            if wnsType?.trimmingSpaces().lowercased() == "wns/raw" { return }
            guard mediaType == "application/xml" || mediaType == "text/xml" || mediaType.hasSuffix("+xml") else {
                throw HeraldError.badRequest(
                    "ServiceBusNotification-Format windows (X-WNS-Type \(wnsType ?? "wns/toast")) takes an XML body with Content-Type application/xml; this request's Content-Type is \(mediaType) (a raw notification says X-WNS-Type: wns/raw and application/octet-stream)"
                )
            }
        default:
            guard mediaType == "application/json" || mediaType == "text/json" || mediaType.hasSuffix("+json") || mediaType == "text/plain" else {
                throw HeraldError.badRequest(
                    "ServiceBusNotification-Format \(format.name) takes a JSON body with Content-Type application/json; this request's Content-Type is \(mediaType)"
                )
            }
        }
    }

    /// `yyyy-MM-ddTHH:mm:ss` in UTC, with optional fraction and zone; also tolerates the
    /// `'T'` that one client writes by mistake.
    static func scheduleTime(_ text: String) throws -> Date {
        guard let date = XSDDateTime.date(from: text.replacingOccurrences(of: "'", with: "")) else {
            throw HeraldError.badRequest("ServiceBusNotification-ScheduleTime '\(text)' is not a time such as 2026-11-22T18:30:00 (UTC)")
        }
        return date
    }
}

extension PlatformPayload {
    /// This payload without the header `name` (any case).
    fileprivate func removingHeader(_ name: String) -> PlatformPayload {
        var payload = self
        payload.headers.removeAll { $0.name.lowercased() == name }
        return payload
    }
}
