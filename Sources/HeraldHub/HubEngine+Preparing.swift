import Foundation
import HeraldCore
import HeraldPush
import NIOCore

/// Stored payloads as provider-ready notifications.
extension HubEngine {
    /// Turns stored payloads into provider-ready notifications, once per notification.
    static func prepare(_ payloads: [PlatformPayload]) throws -> [Platform: PushNotification] {
        var prepared: [Platform: PushNotification] = [:]
        for payload in payloads { prepared[payload.platform] = try prepare(payload) }
        return prepared
    }

    /// One payload as a provider-ready notification (an FCM body is parsed into its message).
    static func prepare(_ payload: PlatformPayload) throws -> PushNotification {
        let headers = payload.headers.map { (name: $0.name, value: $0.value) }
        switch payload.platform {
        case .fcm:
            let message = try JSONValue(parsing: payload.body)
            return PushNotification(body: .fcmMessage(message), headers: headers)
        case .apns, .wns, .webpush:
            return PushNotification(body: .bytes(ByteBuffer(bytes: payload.body)), headers: headers)
        }
    }

    /// Prepares payloads for a caller that is accepting them: `400` when one cannot be sent.
    static func prepareForSending(_ payloads: [PlatformPayload]) throws(HeraldError) -> [Platform: PushNotification] {
        do {
            return try prepare(payloads)
        } catch {
            throw .badRequest("the fcm payload must be the JSON object of an FCM v1 message")
        }
    }
}
