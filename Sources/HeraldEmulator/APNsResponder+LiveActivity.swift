import Foundation
import Logging
import NIOCore
import Synchronization

/// A `liveactivity` push to a device token, past the checks every push gets.
struct LiveActivityPush {
    var token: String
    var body: ByteBuffer
    var notification: ReceivedNotification
    /// Authenticated by a client certificate rather than a provider token.
    var certificateAuthenticated: Bool
    /// The token is a registered one (not one an open registry accepts unseen).
    var known: Bool
}

extension APNsResponder {
    /// Checks a Live Activity push and does what it does on the device: a `start` to a
    /// push-to-start token starts an activity (with a new update token), `update` and `end` to an
    /// update token change or end it. `nil` when it is accepted.
    func respondToLiveActivity(_ push: LiveActivityPush, now: Date) -> LiveActivityRegistry.Refusal? {
        let payload: LiveActivityPayload
        switch LiveActivityPayload.parse(push.body) {
        case .success(let parsed): payload = parsed
        case .failure(let invalid):
            logger.trace("apns emulator refused a live activity payload", metadata: ["herald.apns.problem": "\(invalid.message)"])
            return .init(status: 400, reason: .badPayload)
        }
        switch liveActivities.kind(of: push.token) {
        case .pushToStart:
            // Push-to-start takes token-based authentication only; certificate requests are
            // refused as APNs refuses a topic the certificate may not push to.
            if push.certificateAuthenticated { return .init(status: 400, reason: .topicDisallowed) }
            let updateToken = RandomIdentifier.hex(byteCount: 32)
            do {
                let activity = try liveActivities.start(
                    token: push.token, payload: payload, notification: push.notification,
                    budget: configuration.pushToStartBudget, newUpdateToken: updateToken, now: now)
                if let token = activity.updateToken {
                    registry.register(token: token, topic: activity.topic + Self.liveActivitySuffix)
                }
            } catch {
                return error
            }
        case .update:
            do {
                try liveActivities.update(token: push.token, payload: payload, notification: push.notification, now: now)
            } catch {
                return error
            }
        case nil:
            // A device token of the app is no activity's; an open registry takes unseen tokens.
            if push.known { return .init(status: 400, reason: .deviceTokenNotForTopic) }
        }
        return nil
    }

    /// `POST /4/broadcasts/apps/{bundle id}`: one Live Activity push to every activity
    /// listening on the `apns-channel-id` channel.
    func respondToBroadcast(_ request: EmulatorRequest, state: inout ConnectionState) -> EmulatorResponse {
        func refuse(_ status: Int, _ reason: APNsReason) -> EmulatorResponse {
            error(status, reason, request: request, idHeader: "apns-request-id")
        }
        let topic = String(request.path.dropFirst(Self.broadcastPrefix.count))
        guard !topic.isEmpty, !topic.contains("/") else { return refuse(404, .badPath) }
        guard request.method == "POST" else { return refuse(405, .methodNotAllowed) }
        let now = configuration.now()
        switch authenticator.authenticate(request.headers.first("authorization"), state: &state, now: now) {
        case .failure(let failure): return refuse(failure.status, failure.reason)
        case .success(.certificate(let certificateTopic)) where certificateTopic != topic: return refuse(403, .topicMismatch)
        case .success: break
        }
        if !configuration.topics.isEmpty, !configuration.topics.contains(topic) { return refuse(403, .topicMismatch) }
        if let apnsTopic = request.headers.first("apns-topic"), apnsTopic != topic { return refuse(400, .topicDisallowed) }
        if let requestID = request.headers.first("apns-request-id"), UUID(uuidString: requestID) == nil {
            return refuse(400, .badMessageId)
        }
        let channelID: String
        switch Self.channelID(of: request) {
        case .success(let id): channelID = id
        case .failure(let failure): return refuse(failure.status, failure.reason)
        }
        guard let pushType = request.headers.first("apns-push-type") else { return refuse(400, .missingPushType) }
        guard pushType.lowercased() == "liveactivity" else { return refuse(400, .invalidPushType) }
        guard let priority = request.headers.first("apns-priority"), ["10", "5", "1"].contains(priority) else {
            return refuse(400, .badPriority)
        }
        guard let expirationHeader = request.headers.first("apns-expiration"), let expiration = Int64(expirationHeader),
            expiration >= 0
        else { return refuse(400, .badExpirationDate) }
        guard let body = request.body, body.readableBytes > 0 else { return refuse(400, .payloadEmpty) }
        if body.readableBytes > Self.broadcastPayloadLimit { return refuse(413, .payloadTooLarge) }
        guard JSONSyntax.isObject(body) else { return refuse(400, .badRequestPayload) }
        guard case .success(let payload) = LiveActivityPayload.parse(body), payload.event != .start else {
            // A broadcast updates or ends activities; it cannot start one.
            return refuse(400, .badRequestParams)
        }
        if let fault = faults.next() { return self.fault(fault, request: request, idHeader: "apns-request-id") }
        let requestID = request.headers.first("apns-request-id") ?? RandomIdentifier.uuid()
        let notification = ReceivedNotification(
            id: requestID, token: channelID, headers: Self.apnsHeaders(of: request), payload: String(buffer: body), receivedAt: now)
        do {
            // A channel that stores no message takes only pushes that are not to be stored.
            _ = try liveActivities.broadcast(
                channelID: channelID, topic: topic, payload: payload, notification: notification, now: now,
                checkExpiration: { policy in policy != 0 || expiration == 0 })
        } catch {
            return refuse(error.status, error.reason)
        }
        accepted.record()
        return EmulatorResponse(
            status: 200, headers: [("apns-request-id", requestID), ("apns-unique-id", RandomIdentifier.uuid())])
    }

    /// A broadcast's payload may be 5 KB, more than a device push's 4 KB.
    static let broadcastPayloadLimit = 5120

    /// The `apns-channel-id` header: present (`MissingChannelId`) and base64 of a sensible
    /// length (`BadChannelId`).
    static func channelID(of request: EmulatorRequest) -> Result<String, LiveActivityRegistry.Refusal> {
        guard let id = request.headers.first("apns-channel-id"), !id.isEmpty else {
            return .failure(.init(status: 400, reason: .missingChannelId))
        }
        guard id.utf8.count <= 256, Data(base64Encoded: id) != nil else {
            return .failure(.init(status: 400, reason: .badChannelId))
        }
        return .success(id)
    }
}
