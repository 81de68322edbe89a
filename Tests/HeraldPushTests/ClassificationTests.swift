import Foundation
import HeraldCore
import Testing

@testable import HeraldPush

/// One row of a classification table.
struct Expected: Sendable, CustomTestStringConvertible {
    enum Kind: Sendable { case delivered, channelExpired, retryable, credentialThrottled, permanent }
    var status: Int
    var reason: String?
    var kind: Kind
    var outcome: DeliveryOutcome

    init(_ status: Int, _ reason: String?, _ kind: Kind, _ outcome: DeliveryOutcome) {
        self.status = status
        self.reason = reason
        self.kind = kind
        self.outcome = outcome
    }

    var testDescription: String { "\(status) \(reason ?? "-") → \(kind) \(outcome)" }

    func check(_ result: PushResult, retryAfter: Double?) {
        switch (kind, result.disposition) {
        case (.delivered, .delivered), (.channelExpired, .channelExpired), (.permanent, .permanentFailure):
            break
        case (.retryable, .retryable(let after)), (.credentialThrottled, .credentialThrottled(let after)):
            #expect(after == retryAfter)
        default:
            Issue.record("\(testDescription): got \(result.disposition)")
        }
        #expect(result.outcome == outcome)
        #expect(result.status == status)
        if status != 200 { #expect(result.reason == reason) }
    }
}

@Suite struct ClassificationTests {
    static let apnsTable: [Expected] = [
        Expected(200, nil, .delivered, .success),
        Expected(410, "Unregistered", .channelExpired, .expiredChannel),
        Expected(410, "ExpiredToken", .channelExpired, .expiredChannel),
        Expected(400, "BadDeviceToken", .permanent, .badChannel),
        Expected(400, "DeviceTokenNotForTopic", .permanent, .wrongToken),
        Expected(400, "BadTopic", .permanent, .invalidNotificationFormat),
        Expected(400, "MissingTopic", .permanent, .invalidNotificationFormat),
        Expected(400, "PayloadEmpty", .permanent, .invalidNotificationFormat),
        Expected(400, "BadPriority", .permanent, .invalidNotificationFormat),
        Expected(400, "SomethingNew", .permanent, .invalidNotificationFormat),
        Expected(400, nil, .permanent, .invalidNotificationFormat),
        Expected(403, "ExpiredProviderToken", .retryable, .invalidCredentials),
        Expected(403, "InvalidProviderToken", .permanent, .invalidCredentials),
        Expected(403, "MissingProviderToken", .permanent, .invalidCredentials),
        Expected(403, "BadCertificateEnvironment", .permanent, .invalidCredentials),
        Expected(404, "BadPath", .permanent, .unknownError),
        Expected(405, "MethodNotAllowed", .permanent, .unknownError),
        Expected(413, "PayloadTooLarge", .permanent, .invalidNotificationSize),
        Expected(429, "TooManyRequests", .retryable, .throttled),
        Expected(429, "TooManyProviderTokenUpdates", .retryable, .throttled),
        Expected(500, "InternalServerError", .retryable, .pnsServerError),
        Expected(502, nil, .retryable, .pnsServerError),
        Expected(503, "ServiceUnavailable", .retryable, .pnsUnavailable),
        Expected(503, "Shutdown", .retryable, .pnsUnavailable),
    ]

    @Test(arguments: apnsTable, [nil, 7.0] as [Double?])
    func apns(_ row: Expected, retryAfter: Double?) {
        let result = APNsProvider.classify(status: row.status, reason: row.reason.map { APNsReason(rawValue: $0) }, retryAfter: retryAfter)
        row.check(result, retryAfter: retryAfter)
    }

    static let fcmTable: [Expected] = [
        Expected(200, nil, .delivered, .success),
        Expected(404, "UNREGISTERED", .channelExpired, .expiredChannel),
        Expected(400, "UNREGISTERED", .channelExpired, .expiredChannel),
        Expected(400, "INVALID_ARGUMENT", .permanent, .invalidNotificationFormat),
        Expected(403, "SENDER_ID_MISMATCH", .permanent, .wrongToken),
        Expected(429, "QUOTA_EXCEEDED", .credentialThrottled, .throttled),
        Expected(429, "RESOURCE_EXHAUSTED", .credentialThrottled, .throttled),
        Expected(503, "UNAVAILABLE", .retryable, .pnsUnavailable),
        Expected(500, "INTERNAL", .retryable, .pnsServerError),
        Expected(401, "THIRD_PARTY_AUTH_ERROR", .permanent, .invalidCredentials),
        Expected(403, "PERMISSION_DENIED", .permanent, .invalidCredentials),
        Expected(401, "UNAUTHENTICATED", .permanent, .invalidCredentials),
        // Unknown or missing codes fall back on the status; 404 alone never removes a channel.
        Expected(404, "NOT_FOUND", .permanent, .unknownError),
        Expected(404, nil, .permanent, .unknownError),
        Expected(400, nil, .permanent, .invalidNotificationFormat),
        Expected(401, nil, .permanent, .invalidCredentials),
        Expected(413, nil, .permanent, .invalidNotificationSize),
        Expected(429, nil, .credentialThrottled, .throttled),
        Expected(502, "SOMETHING_NEW", .retryable, .pnsServerError),
        Expected(503, nil, .retryable, .pnsUnavailable),
    ]

    @Test(arguments: fcmTable, [nil, 30.0] as [Double?])
    func fcm(_ row: Expected, retryAfter: Double?) {
        let result = FCMProvider.classify(status: row.status, errorCode: row.reason.map { FCMErrorCode(rawValue: $0) }, retryAfter: retryAfter)
        row.check(result, retryAfter: retryAfter)
    }

    @Test(
        arguments: [
            (
                #"{"error":{"code":404,"message":"x","status":"NOT_FOUND","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"UNREGISTERED"}]}}"#,
                "UNREGISTERED"
            ),
            (
                #"{"error":{"code":400,"status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[]},{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"INVALID_ARGUMENT"}]}}"#,
                "INVALID_ARGUMENT"
            ),
            (#"{"error":{"code":401,"message":"Request had invalid authentication credentials.","status":"UNAUTHENTICATED"}}"#, "UNAUTHENTICATED"),
            (
                #"{"error":{"code":403,"status":"PERMISSION_DENIED","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"SENDER_ID_MISMATCH"}]}}"#,
                "SENDER_ID_MISMATCH"
            ),
            ("not json", nil),
            (#"{"reason":"BadDeviceToken"}"#, nil),
        ] as [(String, String?)])
    func fcmErrorCodeFromBody(_ body: String, expected: String?) {
        #expect(FCMProvider.errorCode(fromBody: Data(body.utf8))?.rawValue == expected)
    }
}
