public import Foundation
public import HeraldCore
public import NIOCore
public import ServiceLifecycle

/// A device as a push provider addresses it.
public struct PushTarget: Sendable, Hashable {
    /// APNs device token (hex), FCM registration token, WNS channel URI or Web Push endpoint.
    public var handle: String
    /// Web Push subscription keys; required for ``Platform/webpush``.
    public var webPushKeys: WebPushKeys?

    public init(handle: String, webPushKeys: WebPushKeys? = nil) {
        self.handle = handle
        self.webPushKeys = webPushKeys
    }
}

/// A notification rendered for one platform, ready to send to any number of devices.
///
/// Built once per notification and platform and shared by every send, so nothing
/// device-independent is re-encoded in the fan-out loop.
public struct PushNotification: Sendable {
    public enum Body: Sendable {
        /// Bytes sent as they are: the APNs JSON payload, a WNS body, Web Push plaintext.
        case bytes(ByteBuffer)
        /// The fields of an FCM v1 `message` object, without `token`; the FCM provider adds
        /// the device's token and encodes the request with an encoder.
        case fcmMessage(JSONValue)
    }

    public var body: Body {
        didSet { fcmRequest = nil }
    }
    /// Push-service headers to send with it: `apns-*` for APNs, `X-WNS-*` for WNS,
    /// `TTL`/`Urgency`/`Topic` for Web Push. Names are matched case-insensitively.
    public var headers: [(name: String, value: String)]
    /// An FCM message body's request, encoded once for every device it is sent to (see
    /// ``encodedOnceForEveryDevice()``); `nil` otherwise, and again once the body changes.
    private(set) var fcmRequest: FCMRequestTemplate?

    public init(body: Body, headers: [(name: String, value: String)] = []) {
        self.body = body
        self.headers = headers
    }

    /// This notification with an FCM message body's request encoded once, so that each
    /// device's send only splices its token in; unchanged for any other body. For a
    /// notification shared by many devices: one rendered for a single device (a template
    /// send's) would pay an encoding more than it saves.
    package func encodedOnceForEveryDevice() -> PushNotification {
        var shared = self
        shared.fcmRequest = FCMRequestTemplate(body)
        return shared
    }

    /// The first value of a header, compared case-insensitively.
    public func header(_ name: String) -> String? {
        let lower = name.lowercased()
        return headers.first { $0.name.lowercased() == lower }?.value
    }
}

/// One device's notification in a batch of sends (``PushProvider/send(_:)``).
public struct PushSend: Sendable {
    public var notification: PushNotification
    public var target: PushTarget

    public init(_ notification: PushNotification, to target: PushTarget) {
        self.notification = notification
        self.target = target
    }
}

/// What a push service said about one send, classified so that callers never parse strings.
public struct PushResult: Sendable, Hashable {
    /// How the hub should treat the result.
    public enum Disposition: Sendable, Hashable {
        /// Accepted by the push service.
        case delivered
        /// The handle is dead (APNs 410, FCM UNREGISTERED, WNS 404/410, Web Push 404/410):
        /// remove the registration.
        case channelExpired
        /// Try again later: throttling, 5xx, a dropped connection. `retryAfter` is the
        /// push service's `Retry-After` in seconds, if it sent one.
        case retryable(retryAfter: Double?)
        /// The push service throttles the credential as a whole, not this device: FCM's
        /// project quota (`429`), WNS's limit for the cloud service (`406`, `429`), a Web
        /// Push service's `429` to the sender. Every send of the credential waits
        /// (`retryAfter` seconds, the `Retry-After`, if sent), and this send is tried again
        /// without using up an attempt where the credential has a send budget; elsewhere it is
        /// ``retryable(retryAfter:)``.
        case credentialThrottled(retryAfter: Double?)
        /// The provider cannot send to any device for now (APNs refused its provider token
        /// as an update that came too soon): not the device's fault and not an attempt. Try
        /// again after `retryAfter` seconds; the outcome counts only if the wait is given up.
        case providerPaused(retryAfter: Double)
        /// Will not succeed if repeated.
        case permanentFailure
    }

    public var disposition: Disposition
    /// The outcome to count if this is the final attempt.
    public var outcome: DeliveryOutcome
    /// HTTP status from the push service, or `nil` if no response was received.
    public var status: Int?
    /// The push service's reason string (`BadDeviceToken`, `UNREGISTERED`, …), if any.
    public var reason: String?

    public init(disposition: Disposition, outcome: DeliveryOutcome, status: Int? = nil, reason: String? = nil) {
        self.disposition = disposition
        self.outcome = outcome
        self.status = status
        self.reason = reason
    }

    public static let delivered = PushResult(disposition: .delivered, outcome: .success, status: 200)
}

/// A client of one push service.
///
/// Implementations hold their connections and credentials (refreshing tokens as the
/// service requires) and classify every response. `send` does not retry: the hub owns
/// retries, so that backoff and attempt counts are decided in one place.
///
/// A provider is a service: run it in the service group ahead of what sends through it, and
/// it closes its connections at graceful shutdown, after them.
public protocol PushProvider: Service {
    var platform: Platform { get }

    /// Sends one notification to one device. Never throws: every failure is a ``PushResult``.
    func send(_ notification: PushNotification, to target: PushTarget) async -> PushResult

    /// Sends every notification of `batch`, each to its device; the results come in the order
    /// of `batch`. A provider whose requests can travel together (APNs: one burst per HTTP/2
    /// connection, one wake-up for the whole batch) sends them so; the default sends each on
    /// its own, all at once (``sendEach(_:)``). Never throws, never retries.
    func send(_ batch: [PushSend]) async -> [PushResult]

    /// Closes connections. Sends after this fail with ``DeliveryOutcome/pnsUnreachable``.
    func shutdown() async throws

    /// How many connections to the push service are open now, for metrics; `nil` when the
    /// provider cannot tell (the default).
    var openConnections: Int? { get }

    /// What keeps the provider from sending now, in a sentence, for `/ready`; `nil` when
    /// nothing does (the default).
    var problem: String? { get }

    /// When the credential the provider signs in with expires (an APNs client certificate's
    /// notAfter), for metrics; `nil` when it does not expire by itself (the default).
    var credentialExpiry: Date? { get }

    /// How the provider signs in, and whether the push service last accepted it, for an
    /// operator console and metrics; `configured` with no history when the provider does not
    /// keep one (the default).
    var credentialHealth: PushCredentialHealth { get }

    /// What identifies the credential the provider sends with, among those of its platform
    /// (an APNs key id, an FCM project id; never a secret): providers of several hubs that
    /// send with the same credential share its send budget. The platform's name by default.
    var credentialID: String { get }
}

extension PushProvider {
    public func send(_ batch: [PushSend]) async -> [PushResult] {
        await sendEach(batch)
    }

    /// Sends each notification of `batch` on its own, concurrently, with
    /// ``send(_:to:)``; the results come in the order of `batch`.
    public func sendEach(_ batch: [PushSend]) async -> [PushResult] {
        if batch.count == 1 { return [await send(batch[0].notification, to: batch[0].target)] }
        return await withTaskGroup(of: (Int, PushResult).self) { group in
            for (index, item) in batch.enumerated() {
                group.addTask { (index, await self.send(item.notification, to: item.target)) }
            }
            var results = [PushResult](repeating: .delivered, count: batch.count)
            for await (index, result) in group { results[index] = result }
            return results
        }
    }

    public var openConnections: Int? { nil }

    public var problem: String? { nil }

    /// `nil`: keys and secrets have no expiry of their own.
    public var credentialExpiry: Date? { nil }

    public var credentialHealth: PushCredentialHealth {
        PushCredentialHealth(method: "credentials", expiresAt: credentialExpiry)
    }

    public var credentialID: String { platform.rawValue }

    /// Waits for graceful shutdown (or cancellation), then closes the connections.
    public func run() async throws {
        try? await gracefulShutdown()
        try await shutdown()
    }
}
