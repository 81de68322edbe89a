import HeraldCore
import Testing

@testable import HeraldPush

/// One WNS answer: status, `X-WNS-Status` (also the expected reason when set), and what it means.
struct WNSRow: Sendable, CustomTestStringConvertible {
    var expected: Expected
    var wnsStatus: String?
    var errorDescription: String?

    init(_ status: Int, _ wnsStatus: String?, _ kind: Expected.Kind, _ outcome: DeliveryOutcome, description: String? = nil) {
        self.expected = Expected(status, wnsStatus ?? description, kind, outcome)
        self.wnsStatus = wnsStatus
        self.errorDescription = description
    }

    var testDescription: String { expected.testDescription }
}

@Suite struct WNSClassificationTests {
    static let table: [WNSRow] = [
        WNSRow(200, nil, .delivered, .success),
        WNSRow(200, "received", .delivered, .success),
        WNSRow(200, "somethingnew", .delivered, .success),
        WNSRow(200, "dropped", .permanent, .dropped),
        WNSRow(200, "channelthrottled", .retryable, .throttled),
        WNSRow(400, nil, .permanent, .invalidNotificationFormat, description: "X-WNS-Type is missing."),
        WNSRow(401, nil, .permanent, .invalidCredentials, description: "Token expired"),
        WNSRow(403, nil, .permanent, .invalidCredentials),
        WNSRow(404, nil, .channelExpired, .expiredChannel),
        WNSRow(405, nil, .permanent, .unknownError),
        WNSRow(406, "channelthrottled", .credentialThrottled, .throttled),
        WNSRow(406, nil, .credentialThrottled, .throttled),
        WNSRow(410, nil, .channelExpired, .expiredChannel, description: "The channel has expired."),
        WNSRow(413, nil, .permanent, .invalidNotificationSize),
        WNSRow(429, nil, .credentialThrottled, .throttled),
        WNSRow(500, nil, .retryable, .pnsServerError),
        WNSRow(502, nil, .retryable, .pnsServerError),
        WNSRow(503, nil, .retryable, .pnsUnavailable),
        WNSRow(504, nil, .retryable, .pnsServerError),
        WNSRow(302, nil, .permanent, .unknownError),
    ]

    @Test(arguments: table, [nil, 7] as [Double?])
    func classification(_ row: WNSRow, retryAfter: Double?) {
        let result = WNSProvider.classify(
            status: row.expected.status,
            wnsStatus: row.wnsStatus.map(WNSStatus.init(rawValue:)),
            errorDescription: row.errorDescription,
            retryAfter: retryAfter
        )
        row.expected.check(result, retryAfter: retryAfter)
        if row.expected.kind == .delivered { #expect(result == .delivered) }
    }

    @Test func aLongErrorDescriptionIsCutShort() {
        let result = WNSProvider.classify(status: 400, wnsStatus: nil, errorDescription: String(repeating: "d", count: 500))
        #expect(result.reason?.count == 200)
    }
}
