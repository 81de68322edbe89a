import Foundation
import HeraldCore
import HeraldHubWire
import Testing

@Suite("Hub-API native bodies")
struct PlatformPayloadHubFormatsTests {
    private func native(
        _ platform: Platform,
        legacyGCM: Bool = false,
        _ body: String,
        _ headers: [(String, String)] = []
    ) throws(HeraldError) -> PlatformPayload {
        try PlatformPayload.hubNative(
            platform: platform,
            legacyGCM: legacyGCM,
            body: Data(body.utf8),
            headers: headers.map { PlatformPayload.Header(name: $0.0, value: $0.1) }
        )
    }

    private func text(_ payload: PlatformPayload) -> String { String(decoding: payload.body, as: UTF8.self) }

    private func expectError(
        _ code: HeraldError.Code,
        containing fragment: String,
        sourceLocation: SourceLocation = #_sourceLocation,
        _ body: () throws(HeraldError) -> PlatformPayload
    ) {
        do {
            let payload = try body()
            Issue.record("expected \(code), got a payload: \(text(payload))", sourceLocation: sourceLocation)
        } catch {
            #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
            #expect(error.message.contains(fragment), "\(error.message)", sourceLocation: sourceLocation)
        }
    }

    // MARK: APNs

    @Test func apnsKeepsTheBodyAndApnsHeadersLowercasedAndDropsOthers() throws {
        let body = #"{"aps":{"alert":"Hi"},"x":1}"#
        let payload = try native(
            .apns, body,
            [
                ("Apns-Push-Type", "alert"), ("apns-collapse-id", "c1"), ("ServiceBusNotification-Format", "apple"),
                ("Content-Type", "application/json"),
            ]
        )
        #expect(payload.platform == .apns)
        #expect(text(payload) == body)
        #expect(payload.headers == [.init(name: "apns-push-type", value: "alert"), .init(name: "apns-collapse-id", value: "c1")])
    }

    @Test(arguments: [
        ("1735689600", "1735689600"),
        ("2025-01-01T00:00:00Z", "1735689600"),
        ("2025-01-01T00:00:00.750Z", "1735689600"),
        ("2025-01-01T01:00:00+01:00", "1735689600"),
        ("2025-01-01T01:00+0100", "1735689600"),
        ("2025-01-01T00:00:00", "1735689600"),
        ("2025-01-01 00:00:00Z", "1735689600"),
        ("01/01/2025 00:00:00", "1735689600"),
        ("1/1/2025 12:00:00 AM", "1735689600"),
        ("01/01/2025 1:30:00 PM", "1735738200"),
    ])
    func legacyExpiryBecomesApnsExpirationInUnixSeconds(value: String, seconds: String) throws {
        let payload = try native(.apns, #"{"aps":{}}"#, [("ServiceBusNotification-Apns-Expiry", value)])
        #expect(payload.headers == [.init(name: "apns-expiration", value: seconds)])
    }

    @Test func legacyPriorityBecomesApnsPriorityButExplicitApnsHeadersWin() throws {
        let legacy = try native(.apns, #"{"aps":{}}"#, [("X-Apns-Priority", "5")])
        #expect(legacy.headers == [.init(name: "apns-priority", value: "5")])

        let both = try native(
            .apns, #"{"aps":{}}"#,
            [
                ("X-Apns-Priority", "5"), ("apns-priority", "10"), ("ServiceBusNotification-Apns-Expiry", "2025-01-01T00:00:00Z"),
                ("apns-expiration", "0"),
            ]
        )
        #expect(both.headers == [.init(name: "apns-priority", value: "10"), .init(name: "apns-expiration", value: "0")])
    }

    @Test func apnsRefusals() {
        expectError(.badRequest, containing: "JSON object") { () throws(HeraldError) in try native(.apns, "hello") }
        expectError(.badRequest, containing: "JSON object") { () throws(HeraldError) in try native(.apns, "[1,2]") }
        expectError(.badRequest, containing: "not a date") { () throws(HeraldError) in
            try native(.apns, #"{"aps":{}}"#, [("ServiceBusNotification-Apns-Expiry", "tomorrow")])
        }
        expectError(.badRequest, containing: "2025-02-30") { () throws(HeraldError) in
            try native(.apns, #"{"aps":{}}"#, [("ServiceBusNotification-Apns-Expiry", "2025-02-30T00:00:00Z")])
        }
        expectError(.badRequest, containing: "X-Apns-Priority must be 10") { () throws(HeraldError) in
            try native(.apns, #"{"aps":{}}"#, [("X-Apns-Priority", "high")])
        }
        expectError(.badRequest, containing: "control character") { () throws(HeraldError) in
            try native(.apns, #"{"aps":{}}"#, [("apns-collapse-id", "a\r\nb")])
        }
    }

    @Test func apnsSizeLimitIsHigherForVoIP() throws {
        let big = #"{"aps":{},"pad":""# + String(repeating: "x", count: 4500) + #""}"#
        expectError(.payloadTooLarge, containing: "at most 4096") { () throws(HeraldError) in try native(.apns, big) }
        let voip = try native(.apns, big, [("apns-push-type", "voip")])
        #expect(voip.body.count > 4096)
        let huge = #"{"aps":{},"pad":""# + String(repeating: "x", count: 5200) + #""}"#
        expectError(.payloadTooLarge, containing: "at most 5120") { () throws(HeraldError) in
            try native(.apns, huge, [("apns-push-type", "voip")])
        }
    }

    // MARK: FCM v1

    @Test func fcmV1BodyBecomesTheMessageObject() throws {
        let payload = try native(
            .fcm, #"{"message":{"notification":{"title":"T","body":"B"},"data":{"k":"v"}}}"#, [("ServiceBusNotification-Format", "fcmv1")]
        )
        #expect(payload.platform == .fcm)
        #expect(text(payload) == #"{"data":{"k":"v"},"notification":{"body":"B","title":"T"}}"#)
        #expect(payload.headers.isEmpty)
    }

    @Test(arguments: ["token", "topic", "condition"])
    func fcmV1RefusesItsOwnTargets(field: String) {
        expectError(.badRequest, containing: "message.\(field)") { () throws(HeraldError) in
            try native(.fcm, #"{"message":{"\#(field)":"x","data":{"k":"v"}}}"#)
        }
    }

    @Test func fcmV1BareMessageObjectIsAccepted() throws {
        // Some clients send the message without its {"message": …} wrapper.
        let payload = try native(.fcm, #"{"notification":{"title":"T"},"data":{"k":"v"}}"#)
        #expect(text(payload) == #"{"data":{"k":"v"},"notification":{"title":"T"}}"#)
    }

    @Test func fcmV1Refusals() {
        expectError(.badRequest, containing: "no 'message'") { () throws(HeraldError) in
            try native(.fcm, #"{"notification":{"title":"T"},"priority":"high"}"#)
        }
        expectError(.badRequest, containing: "JSON object") { () throws(HeraldError) in try native(.fcm, "not json") }
        expectError(.badRequest, containing: "must be a string") { () throws(HeraldError) in
            try native(.fcm, #"{"message":{"data":{"n":3}}}"#)
        }
        expectError(.badRequest, containing: "reserved by FCM") { () throws(HeraldError) in
            try native(.fcm, #"{"message":{"data":{"google.x":"1"}}}"#)
        }
        let big = #"{"message":{"data":{"pad":""# + String(repeating: "x", count: 4200) + #""}}}"#
        expectError(.payloadTooLarge, containing: "FCM accepts at most 4096") { () throws(HeraldError) in try native(.fcm, big) }
    }

    // MARK: Legacy GCM/FCM

    @Test func legacyGCMIsTranslatedToAnFCMV1Message() throws {
        let legacy = #"""
            {"notification":{"title":"T","body":"B","icon":"ic","android_channel_id":"news","body_loc_args":"[\"a\",2]",
             "image":"https://example.com/i.png","unknown_field":1},
             "data":{"s":"text","n":3,"b":true,"o":{"x":1}},
             "priority":"high","time_to_live":3600,"collapse_key":"score","content_available":true,"dry_run":true}
            """#
        let payload = try native(.fcm, legacyGCM: true, legacy)
        let expected = #"""
            {"android":{"collapse_key":"score","notification":{"body_loc_args":["a","2"],"channel_id":"news","icon":"ic"},\#
            "priority":"high","ttl":"3600s"},"data":{"b":"true","n":"3","o":"{\"x\":1}","s":"text"},\#
            "notification":{"body":"B","image":"https://example.com/i.png","title":"T"}}
            """#
        #expect(text(payload) == expected)
    }

    @Test func legacyGCMDataOnlyAndNormalPriority() throws {
        let payload = try native(.fcm, legacyGCM: true, #"{"data":{"message":"hi"},"priority":"normal"}"#)
        #expect(text(payload) == #"{"android":{"priority":"normal"},"data":{"message":"hi"}}"#)
    }

    @Test func legacyGCMRefusals() {
        for field in ["to", "registration_ids", "condition"] {
            expectError(.badRequest, containing: "remove '\(field)'") { () throws(HeraldError) in
                try native(.fcm, legacyGCM: true, #"{"\#(field)":"x","data":{"k":"v"}}"#)
            }
        }
        expectError(.badRequest, containing: "'priority'") { () throws(HeraldError) in
            try native(.fcm, legacyGCM: true, #"{"priority":"urgent"}"#)
        }
        expectError(.badRequest, containing: "time_to_live") { () throws(HeraldError) in
            try native(.fcm, legacyGCM: true, #"{"time_to_live":-1}"#)
        }
        expectError(.badRequest, containing: "reserved by FCM") { () throws(HeraldError) in
            try native(.fcm, legacyGCM: true, #"{"data":{"from":"me"}}"#)
        }
        // A v1 body sent as legacy is not silently accepted as an empty message.
        expectError(.badRequest, containing: "must be a JSON object") { () throws(HeraldError) in
            try native(.fcm, legacyGCM: true, "[]")
        }
    }

    // MARK: WNS

    @Test func wnsKeepsTheBodyAndXWNSHeaders() throws {
        let toast = #"<toast><visual><binding template="ToastGeneric"><text>Hi</text></binding></visual></toast>"#
        let payload = try native(.wns, toast, [("X-WNS-Type", "WNS/Toast"), ("X-WNS-TTL", "60"), ("Content-Type", "text/xml")])
        #expect(text(payload) == toast)
        #expect(payload.headers == [.init(name: "X-WNS-Type", value: "wns/toast"), .init(name: "X-WNS-TTL", value: "60")])
    }

    @Test(arguments: [
        (#"<?xml version="1.0" encoding="utf-8"?><!-- tile --><tile><visual/></tile>"#, "wns/tile"),
        ("\u{FEFF}  <badge value=\"3\"/>", "wns/badge"),
        ("<toast launch=\"x\">\n<visual/></toast>", "wns/toast"),
    ])
    func wnsInfersTheTypeFromTheRootElement(body: String, type: String) throws {
        let payload = try native(.wns, body)
        #expect(payload.headers == [.init(name: "X-WNS-Type", value: type)])
    }

    @Test func wnsRawNeedsNoXML() throws {
        let payload = try native(.wns, #"{"id":"42"}"#, [("x-wns-type", "wns/raw")])
        #expect(payload.headers == [.init(name: "X-WNS-Type", value: "wns/raw")])
    }

    @Test func wnsRefusals() {
        expectError(.badRequest, containing: "X-WNS-Type is required") { () throws(HeraldError) in
            try native(.wns, #"{"id":"42"}"#)
        }
        expectError(.badRequest, containing: "X-WNS-Type is required") { () throws(HeraldError) in
            try native(.wns, "<notification/>")
        }
        expectError(.badRequest, containing: "must be one of") { () throws(HeraldError) in
            try native(.wns, "<toast/>", [("X-WNS-Type", "wns/popup")])
        }
        expectError(.badRequest, containing: "must be <tile>; it is <toast>") { () throws(HeraldError) in
            try native(.wns, "<toast/>", [("X-WNS-Type", "wns/tile")])
        }
        expectError(.badRequest, containing: "must be XML") { () throws(HeraldError) in
            try native(.wns, "hello", [("X-WNS-Type", "wns/toast")])
        }
        let big = "<toast>" + String(repeating: "x", count: 5000) + "</toast>"
        expectError(.payloadTooLarge, containing: "WNS accepts at most 5000") { () throws(HeraldError) in try native(.wns, big) }
    }

    // MARK: Web Push

    @Test func webPushKeepsTheBodyAndItsThreeHeaders() throws {
        let payload = try native(
            .webpush, "plain text", [("ttl", "60"), ("URGENCY", "high"), ("Topic", "t"), ("Content-Type", "text/plain")]
        )
        #expect(text(payload) == "plain text")
        #expect(
            payload.headers == [
                .init(name: "TTL", value: "60"), .init(name: "Urgency", value: "high"), .init(name: "Topic", value: "t"),
            ])
        let big = String(repeating: "x", count: 4000)
        expectError(.payloadTooLarge, containing: "Web Push accepts at most 3993") { () throws(HeraldError) in
            try native(.webpush, big)
        }
    }
}
