import Crypto
import Foundation
import HeraldCore
import HeraldTLS
import Logging
import NIOCore
import NIOSSL
import Synchronization

/// The APNs emulator's request handling: `POST /3/device/<token>` checked the way APNs checks it,
/// and `/_emulator/…` control routes.
final class APNsResponder: EmulatorResponder {
    typealias ConnectionState = APNsAuthenticator.ConnectionState

    struct ErrorBody: Encodable {
        var reason: String
        var timestamp: Int64?
    }

    static let pushTypes: Set<String> = [
        "alert", "background", "voip", "location", "complication", "fileprovider", "mdm", "liveactivity",
        "pushtotalk", "widgets",
    ]
    /// Topic suffixes APNs accepts for the same app (VoIP, complications, file provider, Live Activities).
    static let topicSuffixes = [".voip", ".complication", ".pushkit.fileprovider", liveActivitySuffix]
    static let liveActivitySuffix = ".push-type.liveactivity"
    static let broadcastPrefix = "/4/broadcasts/apps/"

    let configuration: APNsEmulator.Configuration
    let registry: DeviceRegistry
    let faults = FaultQueue()
    let accepted = AcceptLog()
    /// Its devices' receipts, once told where to post them.
    let receipts = DeviceReceipts()
    let authenticator: APNsAuthenticator
    let liveActivities: LiveActivityRegistry
    private let errorBodies: [APNsReason: ByteBuffer]
    let logger: Logger

    init(configuration: APNsEmulator.Configuration, logger: Logger) {
        self.configuration = configuration
        self.registry = DeviceRegistry(inboxLimit: configuration.inboxLimit)
        self.authenticator = APNsAuthenticator(configuration: configuration)
        self.liveActivities = LiveActivityRegistry(inboxLimit: configuration.inboxLimit)
        self.logger = logger
        var bodies: [APNsReason: ByteBuffer] = [:]
        for reason in APNsReason.known {
            bodies[reason] = Self.encode(ErrorBody(reason: reason.rawValue))
        }
        self.errorBodies = bodies
    }

    func makeConnectionState() -> ConnectionState { ConnectionState() }

    func makeConnectionState(clientCertificate: NIOSSLCertificate?) -> ConnectionState {
        authenticator.makeConnectionState(clientCertificate: clientCertificate)
    }

    // MARK: - Requests

    func respond(
        to request: EmulatorRequest, state: inout ConnectionState, allocator: ByteBufferAllocator
    )
        -> EmulatorResponse
    {
        let path = request.path
        let devicePrefix = "/3/device/"
        guard path.hasPrefix(devicePrefix) || path == "/3/device" else {
            if path.hasPrefix(Self.broadcastPrefix) {
                return respondToBroadcast(request, state: &state)
            }
            if path.hasPrefix(EmulatorControlAPI.prefix) {
                if let response = LiveActivityControlAPI.respond(to: request, control: self, allocator: allocator) {
                    return response
                }
                return EmulatorControlAPI.respond(to: request, control: self, allocator: allocator)
            }
            return error(404, .badPath, request: request)
        }
        guard request.method == "POST" else {
            return error(405, .methodNotAllowed, request: request)
        }

        // Provider token, or else the connection's client certificate.
        let now = configuration.now()
        var certificateTopic: String?
        switch authenticator.authenticate(request.headers.first("authorization"), state: &state, now: now) {
        case .success(.providerToken): break
        case .success(.certificate(let topic)): certificateTopic = topic
        case .failure(let failure): return error(failure.status, failure.reason, request: request)
        }

        // Device token.
        var deviceToken = String(path.dropFirst(devicePrefix.utf8.count))
        if deviceToken.isEmpty {
            return error(400, .missingDeviceToken, request: request)
        }
        switch Self.checkDeviceToken(deviceToken) {
        case .invalid: return error(400, .badDeviceToken, request: request)
        case .lowercase: break
        case .mixedCase: deviceToken = deviceToken.lowercased()
        }
        var deviceTopic: String?
        switch registry.status(of: deviceToken) {
        case .unknown:
            if !configuration.openDeviceRegistry {
                return error(400, .badDeviceToken, request: request)
            }
        case .unregistered(let at):
            return unregistered(at: at, request: request)
        case .active(let topic):
            deviceTopic = topic
        }

        // Headers.
        guard let topic = request.headers.first("apns-topic"), !topic.isEmpty else {
            return error(400, .missingTopic, request: request)
        }
        if !configuration.topics.isEmpty, !Self.topic(topic, isAllowedIn: configuration.topics) {
            return error(400, .topicDisallowed, request: request)
        }
        if let certificateTopic, !Self.topic(topic, belongsTo: certificateTopic) {
            return error(400, .topicDisallowed, request: request)
        }
        let pushType = request.headers.first("apns-push-type")
        if let pushType, !Self.pushTypes.contains(pushType) {
            return error(400, .invalidPushType, request: request)
        }
        // Live Activity pushes go to `<bundle id>.push-type.liveactivity`, and only they do.
        let isLiveActivity = pushType == "liveactivity"
        if isLiveActivity != topic.hasSuffix(Self.liveActivitySuffix) {
            return error(400, isLiveActivity ? .topicDisallowed : .invalidPushType, request: request)
        }
        if let deviceTopic, !Self.topic(topic, belongsTo: deviceTopic) {
            return error(400, .deviceTokenNotForTopic, request: request)
        }
        if let priority = request.headers.first("apns-priority") {
            guard priority == "10" || priority == "5" || priority == "1" else {
                return error(400, .badPriority, request: request)
            }
            if pushType == "background", priority != "5" {
                return error(400, .badPriority, request: request)
            }
        }
        if let expiration = request.headers.first("apns-expiration") {
            guard let seconds = Int64(expiration), seconds >= 0 else {
                return error(400, .badExpirationDate, request: request)
            }
        }
        if let collapseID = request.headers.first("apns-collapse-id"), collapseID.utf8.count > 64 {
            return error(400, .badCollapseId, request: request)
        }
        let apnsID = request.headers.first("apns-id")
        if let apnsID, UUID(uuidString: apnsID) == nil {
            return error(400, .badMessageId, request: request)
        }

        // Payload.
        let size = request.bodyCount
        guard size > 0, let body = request.body else {
            return error(400, .payloadEmpty, request: request)
        }
        let limit = (pushType == "voip" || topic.hasSuffix(".voip")) ? 5120 : 4096
        if size > limit {
            return error(413, .payloadTooLarge, request: request)
        }
        guard JSONSyntax.isObject(body) else {
            return error(400, .badPayload, request: request)
        }

        if let fault = faults.next() {
            return self.fault(fault, request: request)
        }

        // Accepted.
        let id = apnsID ?? RandomIdentifier.uuid()
        if isLiveActivity {
            let notification = ReceivedNotification(
                id: id, token: deviceToken, headers: Self.apnsHeaders(of: request), payload: String(buffer: body), receivedAt: now)
            let liveActivity = LiveActivityPush(
                token: deviceToken, body: body, notification: notification,
                certificateAuthenticated: certificateTopic != nil, known: deviceTopic != nil)
            if let refusal = respondToLiveActivity(liveActivity, now: now) {
                return error(refusal.status, refusal.reason, request: request)
            }
        }
        if configuration.recordsPayloads {
            registry.record(
                ReceivedNotification(
                    id: id,
                    token: deviceToken,
                    headers: Self.apnsHeaders(of: request),
                    payload: String(buffer: body),
                    receivedAt: now
                ),
                collapseID: request.headers.first("apns-collapse-id")
            )
        }
        accepted.record()
        if !isLiveActivity { receipts.received(body.readableBytesView, platform: .apns, token: deviceToken) }
        return EmulatorResponse(status: 200, headers: [("apns-id", id), ("apns-unique-id", RandomIdentifier.uuid())])
    }

    // MARK: - Checks

    /// The request's `apns-*` headers, as a device's inbox keeps them.
    static func apnsHeaders(of request: EmulatorRequest) -> [String: String] {
        var headers: [String: String] = [:]
        request.headers.forEach(withPrefix: "apns-") { name, value in headers[name] = value }
        return headers
    }

    enum DeviceTokenForm { case invalid, lowercase, mixedCase }

    /// Even-length hex, 64 to 200 characters.
    static func checkDeviceToken(_ token: String) -> DeviceTokenForm {
        let utf8 = token.utf8
        guard utf8.count >= 64, utf8.count <= 200, utf8.count % 2 == 0 else { return .invalid }
        var form = DeviceTokenForm.lowercase
        for byte in utf8 {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"): continue
            case UInt8(ascii: "A")...UInt8(ascii: "F"): form = .mixedCase
            default: return .invalid
            }
        }
        return form
    }

    /// `topic` is the app's topic or the app's topic with one of APNs' suffixes.
    static func topic(_ topic: String, belongsTo appTopic: String) -> Bool {
        topic == appTopic || topicSuffixes.contains { topic == appTopic + $0 }
    }

    static func topic(_ topic: String, isAllowedIn allowed: Set<String>) -> Bool {
        if allowed.contains(topic) { return true }
        for suffix in topicSuffixes where topic.hasSuffix(suffix) {
            if allowed.contains(String(topic.dropLast(suffix.count))) { return true }
        }
        return false
    }

    // MARK: - Responses

    /// An error answer: `{"reason": …}`, with the request's id echoed in `idHeader` (`apns-id`
    /// for notifications, `apns-request-id` for broadcasts and channel management).
    func error(_ status: Int, _ reason: APNsReason, request: EmulatorRequest, idHeader: String = "apns-id") -> EmulatorResponse {
        logger.trace("apns emulator refused a request", metadata: ["herald.apns.reason": "\(reason.rawValue)"])
        return EmulatorResponse(
            status: status,
            headers: [
                (idHeader, request.headers.first(idHeader) ?? RandomIdentifier.uuid()),
                ("content-type", "application/json"),
            ],
            body: errorBodies[reason] ?? Self.encode(ErrorBody(reason: reason.rawValue))
        )
    }

    private func unregistered(at date: Date, request: EmulatorRequest) -> EmulatorResponse {
        let body = ErrorBody(reason: APNsReason.unregistered.rawValue, timestamp: Int64(date.timeIntervalSince1970 * 1000))
        return EmulatorResponse(
            status: 410,
            headers: [
                ("apns-id", request.headers.first("apns-id") ?? RandomIdentifier.uuid()),
                ("content-type", "application/json"),
            ],
            body: Self.encode(body)
        )
    }

    func fault(_ fault: Fault, request: EmulatorRequest, idHeader: String = "apns-id") -> EmulatorResponse {
        var response = error(fault.status, APNsReason(rawValue: fault.reason), request: request, idHeader: idHeader)
        if let retryAfter = fault.retryAfter {
            response.headers.append(("retry-after", String(retryAfter)))
        }
        return response
    }

    static func encode(_ body: ErrorBody) -> ByteBuffer {
        // Encoding an Encodable struct cannot fail.
        let data = (try? JSONEncoder().encode(body)) ?? Data()
        return ByteBuffer(bytes: data)
    }
}

extension APNsResponder: EmulatorControl {
    func controlRegisterDevice(topic: String?) throws(ControlError) -> String {
        guard let topic, !topic.isEmpty else {
            throw ControlError(status: 400, message: "topic is required")
        }
        return registerDevice(topic: topic)
    }

    func registerDevice(topic: String) -> String {
        let token = RandomIdentifier.hex(byteCount: 32)
        registry.register(token: token, topic: topic)
        return token
    }

    func notifications(for token: String) -> [ReceivedNotification] {
        registry.notifications(for: token.lowercased())
    }

    func controlUnregister(token: String) -> Date {
        let now = configuration.now()
        registry.unregister(token: token.lowercased(), at: now)
        return now
    }

    func injectFaults(_ fault: Fault, count: Int) {
        faults.inject(fault, count: count)
    }

    func clearFaults() {
        faults.clear()
    }

    var acceptedCount: Int { accepted.count }
    func acceptPauses(since moment: Date) -> AcceptLog.Pauses { accepted.pauses(since: moment) }
    var reach: DeviceRegistry.Reach { registry.reach }
}
