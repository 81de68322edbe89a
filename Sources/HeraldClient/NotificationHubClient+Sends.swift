public import Foundation
public import HeraldCore

#if canImport(FoundationNetworking)
import FoundationNetworking
public import HeraldHubWire
#endif

/// Sends: to a tag expression or everyone, directly to device handles, as a test, or at a
/// scheduled time; and what became of each.
extension NotificationHubClient {
    /// The most tags ``send(_:tags:idempotencyKey:)`` joins: the hub's limit for an expression of `||` only.
    public static let maxTagsPerSend = 20
    /// The most handles one ``sendDirectBatch(_:deviceHandles:idempotencyKey:)`` reaches.
    public static let maxBatchHandles = 1000

    /// Sends to the registrations and installations that match `tagExpression` (`&&`, `||`,
    /// `!`, parentheses), or to every one when it is `nil`. Needs the Send right.
    ///
    /// Every send goes under an `Idempotency-Key`: `idempotencyKey`, or a new UUID, which the
    /// client's own retries (``sendRetry``) reuse, so that the hub sends it once; pass your own
    /// to make your retries of the call safe as well.
    ///
    /// - Returns: the notification's id, for ``notificationDetails(id:)``.
    @discardableResult
    public func send(_ notification: HubNotification, tagExpression: String? = nil, idempotencyKey: String? = nil) async throws -> String {
        var request = try sendRequest(notification, path: ["messages"])
        if let tagExpression { request.setValue(tagExpression, forHTTPHeaderField: "ServiceBusNotification-Tags") }
        let response = try await performSend(request, idempotencyKey: idempotencyKey)
        return try Self.locationID(response, what: "notification")
    }

    /// Sends to the registrations with any of `tags` (at most ``maxTagsPerSend``), joined
    /// with ` || `.
    @discardableResult
    public func send(_ notification: HubNotification, tags: [String], idempotencyKey: String? = nil) async throws -> String {
        guard !tags.isEmpty else {
            throw HeraldError.badRequest("send(_:tags:) needs at least one tag; to send to everyone, use send(_:tagExpression: nil)")
        }
        guard tags.count <= Self.maxTagsPerSend else {
            throw HeraldError.badRequest("send(_:tags:) takes at most \(Self.maxTagsPerSend) tags; this call has \(tags.count)")
        }
        try Tag.validate(tags: tags)
        return try await send(notification, tagExpression: tags.joined(separator: " || "), idempotencyKey: idempotencyKey)
    }

    /// Sends a native notification to one device handle, which no registration needs to
    /// hold. For a `browser` notification, `deviceHandle` is the subscription's endpoint and
    /// `webPushKeys` its keys. Needs the Send right.
    ///
    /// - Returns: the notification's id.
    @discardableResult
    public func sendDirect(
        _ notification: HubNotification, deviceHandle: String, webPushKeys: WebPushKeys? = nil, idempotencyKey: String? = nil
    ) async throws -> String {
        try Self.checkDirect(notification)
        var request = try sendRequest(notification, path: ["messages"], query: [(name: "direct", value: "true")])
        request.setValue(deviceHandle, forHTTPHeaderField: "ServiceBusNotification-DeviceHandle")
        if notification.format == .browser {
            guard let webPushKeys else {
                throw HeraldError.badRequest("a direct browser send needs the subscription's webPushKeys (p256dh and auth)")
            }
            request.setValue(webPushKeys.auth, forHTTPHeaderField: "Auth")
            request.setValue(webPushKeys.p256dh, forHTTPHeaderField: "P256DH")
        }
        let response = try await performSend(request, idempotencyKey: idempotencyKey)
        return try Self.locationID(response, what: "notification")
    }

    /// Sends a native notification to up to ``maxBatchHandles`` device handles in one
    /// request (`multipart/mixed`: the notification, then the handles as a JSON array).
    ///
    /// - Returns: the notification's id.
    @discardableResult
    public func sendDirectBatch(_ notification: HubNotification, deviceHandles: [String], idempotencyKey: String? = nil) async throws -> String {
        try await sendDirectBatch(
            notification, devices: .array(deviceHandles.map(JSONValue.string)), count: deviceHandles.count, idempotencyKey: idempotencyKey
        )
    }

    /// Sends a `browser` notification to up to ``maxBatchHandles`` Web Push subscriptions in
    /// one request: endpoints and their keys.
    ///
    /// - Returns: the notification's id.
    @discardableResult
    public func sendDirectBatch(
        _ notification: HubNotification, browserSubscriptions: [String: WebPushKeys], idempotencyKey: String? = nil
    ) async throws -> String {
        let devices = browserSubscriptions.sorted { $0.key < $1.key }.map { endpoint, keys in
            JSONValue.object([("endpoint", .string(endpoint)), ("p256dh", .string(keys.p256dh)), ("auth", .string(keys.auth))])
        }
        return try await sendDirectBatch(notification, devices: .array(devices), count: devices.count, idempotencyKey: idempotencyKey)
    }

    private func sendDirectBatch(_ notification: HubNotification, devices: JSONValue, count: Int, idempotencyKey: String?) async throws -> String {
        try Self.checkDirect(notification)
        guard (1...Self.maxBatchHandles).contains(count) else {
            throw HeraldError.badRequest("a direct batch goes to 1 to \(Self.maxBatchHandles) devices; this one lists \(count)")
        }
        let devicesJSON = HubNotification.encode(devices)
        var boundary = "herald-batch-\(UUID().uuidString.lowercased())"
        while notification.body.range(of: Data(boundary.utf8)) != nil || devicesJSON.range(of: Data(boundary.utf8)) != nil {
            boundary = "herald-batch-\(UUID().uuidString.lowercased())"
        }
        let body = Self.multipart(
            boundary: boundary,
            parts: [
                (name: "notification", contentType: notification.contentType, body: notification.body),
                (name: "devices", contentType: "application/json;charset=utf-8", body: devicesJSON),
            ]
        )
        var batch = notification
        batch.body = body
        batch.contentType = "multipart/mixed; boundary=\"\(boundary)\""
        let request = try sendRequest(batch, path: ["messages", "$batch"], query: [(name: "direct", value: "true")])
        let response = try await performSend(request, idempotencyKey: idempotencyKey)
        return try Self.locationID(response, what: "notification")
    }

    /// Sends to at most ten of the devices that match `tagExpression` (all when `nil`) and
    /// waits for each one's outcome, to check a notification end to end. Needs the Send right.
    public func testSend(_ notification: HubNotification, tagExpression: String? = nil) async throws -> NotificationOutcome {
        var request = try sendRequest(notification, path: ["messages"], query: [(name: "test", value: "true")])
        if let tagExpression { request.setValue(tagExpression, forHTTPHeaderField: "ServiceBusNotification-Tags") }
        let (data, _) = try await perform(request, accepted: [200, 201])
        do throws(HeraldError) {
            return try NotificationOutcome(xml: data)
        } catch {
            throw HeraldError(code: .internalError, message: "the hub's test-send result cannot be read: \(error.message)")
        }
    }

    /// Schedules a send for `date` (to the second, UTC). Needs the Send right.
    ///
    /// - Returns: the scheduled notification's id, for ``cancelScheduled(id:)`` and
    ///   ``notificationDetails(id:)``.
    @discardableResult
    public func schedule(
        _ notification: HubNotification, at date: Date, tagExpression: String? = nil, idempotencyKey: String? = nil
    ) async throws -> String {
        var request = try sendRequest(notification, path: ["schedulednotifications"])
        request.setValue(Self.scheduleTime(date), forHTTPHeaderField: "ServiceBusNotification-ScheduleTime")
        if let tagExpression { request.setValue(tagExpression, forHTTPHeaderField: "ServiceBusNotification-Tags") }
        let response = try await performSend(request, idempotencyKey: idempotencyKey)
        return try Self.locationID(response, what: "scheduled notification")
    }

    /// Cancels a scheduled notification that is not yet due.
    ///
    /// - Throws: `HeraldError` `notFound` (404) when there is no such scheduled
    ///   notification, `conflict` (409) when its delivery already started.
    public func cancelScheduled(id: String) async throws {
        try await perform(makeRequest("DELETE", path: ["schedulednotifications", id]), accepted: [200, 204])
    }

    /// A notification's state, times, body and outcome counts per platform.
    ///
    /// - Throws: `HeraldError` `notFound` (404) for an unknown id.
    public func notificationDetails(id: String) async throws -> NotificationDetails {
        let (data, _) = try await perform(makeRequest("GET", path: ["messages", id]), accepted: [200])
        do throws(HeraldError) {
            return try NotificationDetails(xml: data)
        } catch {
            throw HeraldError(code: .internalError, message: "the hub's notification details cannot be read: \(error.message)")
        }
    }

    // MARK: Helpers

    /// A `POST` of `notification` with its format, content type and headers. The client's
    /// own headers (authorization, version, format, content type) win over the notification's.
    func sendRequest(_ notification: HubNotification, path: [String], query: [(name: String, value: String)] = []) throws -> URLRequest {
        if notification.format == .apple {
            for name in notification.headers.keys where !name.lowercased().hasPrefix("apns-") {
                throw HeraldError.badRequest("APNs header '\(name)' is not an APNs header: they start with 'apns-' (apns-push-type, apns-priority, …)")
            }
        }
        var request = makeRequest(
            "POST", path: path, query: query, headers: notification.headers, body: notification.body, contentType: notification.contentType
        )
        request.setValue(notification.format.rawValue, forHTTPHeaderField: "ServiceBusNotification-Format")
        return request
    }

    static func checkDirect(_ notification: HubNotification) throws {
        guard notification.format.platform != nil else {
            throw HeraldError.badRequest(
                "a direct send carries a native notification (apple, fcmv1, gcm, windows, browser), not \(notification.format)"
            )
        }
    }

    /// A `multipart/mixed` body (RFC 2046): each part's headers, a blank line, its bytes.
    static func multipart(boundary: String, parts: [(name: String, contentType: String, body: Data)]) -> Data {
        var data = Data()
        let crlf = Data("\r\n".utf8)
        for part in parts {
            data.append(Data("--\(boundary)".utf8) + crlf)
            data.append(Data("Content-Type: \(part.contentType)".utf8) + crlf)
            data.append(Data("Content-Disposition: inline; name=\"\(part.name)\"".utf8) + crlf)
            data.append(crlf)
            data.append(part.body)
            data.append(crlf)
        }
        data.append(Data("--\(boundary)--".utf8) + crlf)
        return data
    }

    /// `yyyy-MM-ddTHH:mm:ss` in UTC, as `ServiceBusNotification-ScheduleTime` takes it.
    static func scheduleTime(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        func pad(_ value: Int?, _ width: Int) -> String {
            let digits = String(value ?? 0)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(pad(c.year, 4))-\(pad(c.month, 2))-\(pad(c.day, 2))T\(pad(c.hour, 2)):\(pad(c.minute, 2)):\(pad(c.second, 2))"
    }
}
