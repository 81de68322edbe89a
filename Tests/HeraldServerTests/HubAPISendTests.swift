import Foundation
import HeraldCore
import HeraldEmulator
import HeraldHub
import HeraldServer
import HeraldTestSupport
import Testing

/// Sends on the wire: `POST /{hub}/messages` in every format, direct and batch sends, test
/// sends, scheduled sends and what `GET /{hub}/messages/{id}` reports, checked against what
/// the emulated push services received.
@Suite struct HubAPISendTests {
    static let hub = HubTestServer.hubName
    static let version = HubTestServer.apiVersion

    /// The `Count` of outcome `name` in the details' `list` (such as `ApnsOutcomeCounts`).
    static func count(_ details: WireXML, _ list: String, _ name: String = "Success") -> Int? {
        details.child(list)?.children("Outcome").first { $0.value("Name") == name }.flatMap { $0.value("Count") }.flatMap { Int($0) }
    }

    /// The FCM emulator's record of a message, as JSON.
    static func fcmMessage(_ received: ReceivedNotification?) throws -> [String: Any] {
        let payload = try #require(received?.payload)
        return try #require(try JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any])
    }

    /// The members of `NotificationDetails` in the order of the .NET SDK's data contract.
    static let detailsOrder = [
        "NotificationId", "Location", "State", "EnqueueTime", "StartTime", "EndTime", "NotificationBody", "Tags", "TargetPlatforms",
        "ApnsOutcomeCounts", "MpnsOutcomeCounts", "WnsOutcomeCounts", "GcmOutcomeCounts", "AdmOutcomeCounts", "PnsErrorDetailsUri",
        "FcmOutcomeCounts", "FcmV1OutcomeCounts", "BrowserOutcomeCounts",
    ]

    enum Format: String, CaseIterable, CustomTestStringConvertible {
        case apple, fcmv1, gcm, windows, windowsRaw, browser, template

        var testDescription: String { rawValue }
    }

    /// One native send per format to a tag, and one template send: 201 with
    /// `Location: …/{hub}/messages/{id}`, the device got exactly what was sent, and the
    /// details report the success under the platform's outcome counts.
    @Test(arguments: Format.allCases)
    func sendsReachTheDevicesAndAreReported(format: Format) async throws {
        try await HubTestServer.withServer { server in
            let herald = server.herald
            let response: WireResponse
            let list: [String]
            let check: () throws -> Void
            switch format {
            case .apple:
                let token = herald.apns.registerDevice(topic: TestHerald.topic)
                _ = try await server.createRegistration(
                    Atom.open("AppleRegistrationDescription")
                        + "<Tags>everyone</Tags><DeviceToken>\(token.uppercased())</DeviceToken></AppleRegistrationDescription>"
                )
                let body = #"{"aps":{"alert":"Goal! 1-0"}}"#
                response = try await server.send(format: "apple", body, tags: "everyone", headers: [("apns-push-type", "alert"), ("apns-priority", "10")])
                list = ["ApnsOutcomeCounts"]
                check = {
                    let received = try #require(herald.apns.notifications(for: token).last)
                    #expect(ReceiptIDs.removed(from: received.payload) == body)
                    #expect(received.headers["apns-push-type"] == "alert" && received.headers["apns-priority"] == "10")
                }
            case .fcmv1, .gcm:
                let token = herald.fcm.registerDevice()
                let element = format == .gcm ? "GcmRegistrationId" : "FcmV1RegistrationId"
                let kind = format == .gcm ? "GcmRegistrationDescription" : "FcmV1RegistrationDescription"
                _ = try await server.createRegistration(Atom.open(kind) + "<Tags>everyone</Tags><\(element)>\(token)</\(element)></\(kind)>")
                let body = format == .gcm ? #"{"data":{"score":"2-0"}}"# : #"{"message":{"data":{"score":"1-0"}}}"#
                response = try await server.send(format: format.rawValue, body, tags: "everyone")
                // FCM v1 outcomes are `FcmV1OutcomeCounts` (what the current .NET and JavaScript
                // SDKs read); a legacy GCM send may also be counted as `GcmOutcomeCounts`.
                list = format == .gcm ? ["FcmV1OutcomeCounts", "GcmOutcomeCounts"] : ["FcmV1OutcomeCounts"]
                check = {
                    let message = try Self.fcmMessage(herald.fcm.notifications(for: token).last)
                    #expect(message["token"] as? String == token)
                    #expect(ReceiptIDs.removed(from: message["data"] as? [String: String]) == ["score": format == .gcm ? "2-0" : "1-0"])
                }
            case .windows, .windowsRaw:
                let channel = herald.wns.registerChannel()
                _ = try await server.createRegistration(
                    Atom.open("WindowsRegistrationDescription")
                        + "<Tags>everyone</Tags><ChannelUri>\(Atom.escaped(channel))</ChannelUri></WindowsRegistrationDescription>"
                )
                if format == .windows {
                    let toast = #"<toast><visual><binding template="ToastGeneric"><text>Goal!</text></binding></visual></toast>"#
                    response = try await server.send(
                        format: "windows", toast, tags: "everyone", headers: [("Content-Type", "application/xml"), ("X-WNS-Type", "wns/toast")]
                    )
                    check = {
                        let received = try #require(herald.wns.notifications(for: channel).last)
                        #expect(received.payload == toast)
                        #expect(received.headers["x-wns-type"] == "wns/toast")
                    }
                } else {
                    response = try await server.send(
                        format: "windows", "raw bytes", tags: "everyone", headers: [("Content-Type", "application/octet-stream"), ("X-WNS-Type", "wns/raw")]
                    )
                    check = {
                        let received = try #require(herald.wns.notifications(for: channel).last)
                        // The emulator records a raw notification's bytes in base64.
                        #expect(received.payload == Data("raw bytes".utf8).base64EncodedString())
                        #expect(received.headers["x-wns-type"] == "wns/raw")
                    }
                }
                list = ["WnsOutcomeCounts"]
            case .browser:
                let subscription = herald.webPush.subscribe()
                _ = try await server.createRegistration(
                    Atom.open("BrowserRegistrationDescription") + "<Tags>everyone</Tags><Endpoint>\(Atom.escaped(subscription.endpoint))</Endpoint>"
                        + "<P256DH>\(subscription.p256dh)</P256DH><Auth>\(subscription.auth)</Auth></BrowserRegistrationDescription>"
                )
                let body = #"{"title":"Goal!","body":"1-0"}"#
                response = try await server.send(format: "browser", body, tags: "everyone")
                list = ["BrowserOutcomeCounts"]
                check = { #expect(herald.webPush.notifications(for: subscription).last.map { ReceiptIDs.removed(from: $0.payload) } == body) }
            case .template:
                let token = herald.apns.registerDevice(topic: TestHerald.topic)
                let fcmToken = herald.fcm.registerDevice()
                _ = try await server.createRegistration(
                    Atom.open("AppleTemplateRegistrationDescription") + "<Tags>everyone</Tags><DeviceToken>\(token)</DeviceToken>"
                        + #"<BodyTemplate><![CDATA[{"aps":{"alert":"$(message)"}}]]></BodyTemplate></AppleTemplateRegistrationDescription>"#
                )
                _ = try await server.createRegistration(
                    Atom.open("FcmV1TemplateRegistrationDescription") + "<Tags>everyone</Tags><FcmV1RegistrationId>\(fcmToken)</FcmV1RegistrationId>"
                        + #"<BodyTemplate><![CDATA[{"message":{"data":{"text":"$(message)"}}}]]></BodyTemplate></FcmV1TemplateRegistrationDescription>"#
                )
                response = try await server.send(format: "template", #"{"message":"Hello"}"#, tags: "everyone")
                list = ["ApnsOutcomeCounts"]
                check = {
                    #expect(herald.apns.notifications(for: token).last.map { ReceiptIDs.removed(from: $0.payload) } == #"{"aps":{"alert":"Hello"}}"#)
                    let message = try Self.fcmMessage(herald.fcm.notifications(for: fcmToken).last)
                    #expect(ReceiptIDs.removed(from: message["data"] as? [String: String]) == ["text": "Hello"])
                }
            }

            let id = try server.acceptedID(response)
            #expect(response.header("Location")?.hasPrefix("\(server.baseURL)/\(Self.hub)/messages/\(id)") == true)
            let details = try await server.finishedDetails(id)
            #expect(details.name == "NotificationDetails")
            #expect(details.attributes["xmlns"] == HubTestServer.registrationNamespace)
            // In the order of the .NET SDK's data contract, each outcome a Name and a Count.
            let positions = details.childNames.map { Self.detailsOrder.firstIndex(of: $0) }
            #expect(!positions.contains(nil) && positions.compactMap { $0 } == positions.compactMap { $0 }.sorted(), "\(details.childNames)")
            for counts in details.children where counts.name.hasSuffix("OutcomeCounts") {
                #expect(counts.children.allSatisfy { $0.name == "Outcome" && $0.childNames == ["Name", "Count"] })
            }
            #expect(details.value("NotificationId") == id)
            #expect(details.value("State") == "Completed")
            #expect(details.value("Tags") == "everyone")
            #expect(list.compactMap { Self.count(details, $0) }.reduce(0, +) == 1, "outcomes: \(details.children.map(\.name))")
            if format == .template {
                #expect(Self.count(details, "FcmV1OutcomeCounts") == 1)
            }
            try check()
        }
    }

    @Test func formatsTheHubCannotSendAreBadRequests() async throws {
        try await HubTestServer.withServer { server in
            let token = server.herald.apns.registerDevice(topic: TestHerald.topic)
            _ = try await server.createRegistration(
                Atom.open("AppleRegistrationDescription") + "<DeviceToken>\(token)</DeviceToken></AppleRegistrationDescription>"
            )
            #expect(expectHubError(try await server.send(format: "symbian", "{}"), 400).contains("ServiceBusNotification-Format"))
            #expect(expectHubError(try await server.send(format: nil, #"{"aps":{}}"#), 400).contains("ServiceBusNotification-Format"))
            expectHubError(try await server.send(format: "windowsphone", "<wp:Notification/>"), 400)
            // Bodies that are not what the format says.
            expectHubError(try await server.send(format: "apple", "not json"), 400)
            expectHubError(try await server.send(format: "template", #"["not","an","object"]"#), 400)
            expectHubError(try await server.send(format: "fcmv1", #"{"registration_ids":["a"],"priority":"high"}"#), 400)
            expectHubError(try await server.send(format: "fcmv1", #"{"message":{"token":"x","data":{"a":"b"}}}"#), 400)
            // Nothing went out.
            #expect(server.herald.apns.notifications(for: token).isEmpty)
        }
    }

    @Test func bodiesOver64KBAreTooLarge() async throws {
        try await HubTestServer.withServer { server in
            let huge = #"{"aps":{"alert":""# + String(repeating: "x", count: 64 * 1024) + #""}}"#
            expectHubError(try await server.send(format: "apple", huge), 413)
            expectHubError(try await server.send(format: "template", #"{"m":""# + String(repeating: "y", count: 64 * 1024) + #""}"#), 413)
            // Under the hub's limit but over the push service's: 413 too.
            let tooBigForAPNs = #"{"aps":{"alert":""# + String(repeating: "x", count: 5000) + #""}}"#
            expectHubError(try await server.send(format: "apple", tooBigForAPNs), 413)
            // A registration body over 64 KB, too.
            let id = try await server.newRegistrationID()
            let padded =
                Atom.open("GcmRegistrationDescription") + "<!--" + String(repeating: "z", count: 64 * 1024) + "-->"
                + "<GcmRegistrationId>abc</GcmRegistrationId></GcmRegistrationDescription>"
            expectHubError(try await server.putRegistration(id: id, padded), 413)
        }
    }

    @Test func tagExpressions() async throws {
        try await HubTestServer.withServer { server in
            var tokens: [String: String] = [:]
            for tag in ["a", "b", "c"] {
                let token = server.herald.apns.registerDevice(topic: TestHerald.topic)
                tokens[tag] = token
                _ = try await server.createRegistration(
                    Atom.open("AppleRegistrationDescription") + "<Tags>\(tag)</Tags><DeviceToken>\(token)</DeviceToken></AppleRegistrationDescription>"
                )
            }
            // A syntax error is 400 and says where.
            let bad = try await server.send(format: "apple", #"{"aps":{}}"#, tags: "a && (b")
            #expect(expectHubError(bad, 400).contains("position"))
            expectHubError(try await server.send(format: "apple", #"{"aps":{}}"#, tags: "a &&& b"), 400)

            // A comma-separated list of tags targets any of them.
            let id = try server.acceptedID(try await server.send(format: "apple", #"{"aps":{"alert":"a or b"}}"#, tags: "a, b"))
            let details = try await server.finishedDetails(id)
            #expect(Self.count(details, "ApnsOutcomeCounts") == 2)
            #expect(server.herald.apns.notifications(for: tokens["a"]!).count == 1)
            #expect(server.herald.apns.notifications(for: tokens["b"]!).count == 1)
            #expect(server.herald.apns.notifications(for: tokens["c"]!).isEmpty)

            // An expression with && and !.
            let expression = try server.acceptedID(try await server.send(format: "apple", #"{"aps":{"alert":"not a"}}"#, tags: "!a && (b || c)"))
            #expect(Self.count(try await server.finishedDetails(expression), "ApnsOutcomeCounts") == 2)
            #expect(server.herald.apns.notifications(for: tokens["a"]!).count == 1)
            #expect(server.herald.apns.notifications(for: tokens["c"]!).last.map { ReceiptIDs.removed(from: $0.payload) } == #"{"aps":{"alert":"not a"}}"#)

            // No tags at all: a broadcast.
            let broadcast = try server.acceptedID(try await server.send(format: "apple", #"{"aps":{"alert":"all"}}"#))
            #expect(Self.count(try await server.finishedDetails(broadcast), "ApnsOutcomeCounts") == 3)
        }
    }

    @Test func directSendsNeedNoRegistration() async throws {
        try await HubTestServer.withServer { server in
            let herald = server.herald
            // APNs: the handle as the SDKs pass it, in upper case.
            let token = herald.apns.registerDevice(topic: TestHerald.topic)
            let apple = try await server.send(
                format: "apple", #"{"aps":{"alert":"direct"}}"#, query: "&direct",
                headers: [("ServiceBusNotification-DeviceHandle", token.uppercased()), ("apns-push-type", "alert")]
            )
            let appleID = try server.acceptedID(apple)
            #expect(Self.count(try await server.finishedDetails(appleID), "ApnsOutcomeCounts") == 1)
            #expect(herald.apns.notifications(for: token).last.map { ReceiptIDs.removed(from: $0.payload) } == #"{"aps":{"alert":"direct"}}"#)
            // The legacy APNs headers become apns-expiration (unix seconds) and apns-priority.
            let legacy = try await server.send(
                format: "apple", #"{"aps":{"alert":"legacy"}}"#, query: "&direct",
                headers: [
                    ("ServiceBusNotification-DeviceHandle", token), ("ServiceBusNotification-Apns-Expiry", "2030-01-01T00:00:00Z"),
                    ("X-Apns-Priority", "5"),
                ]
            )
            _ = try await server.finishedDetails(try server.acceptedID(legacy))
            let received = try #require(herald.apns.notifications(for: token).last)
            #expect(ReceiptIDs.removed(from: received.payload) == #"{"aps":{"alert":"legacy"}}"#)
            #expect(received.headers["apns-expiration"] == "1893456000")
            #expect(received.headers["apns-priority"] == "5")
            // Herald's delivery options: -Priority and -CollapseId become the platform's own.
            let options = try await server.send(
                format: "apple", #"{"aps":{"alert":"options"}}"#, query: "&direct",
                headers: [
                    ("ServiceBusNotification-DeviceHandle", token), ("ServiceBusNotification-Priority", "low"),
                    ("ServiceBusNotification-CollapseId", "score"),
                ]
            )
            _ = try await server.finishedDetails(try server.acceptedID(options))
            let withOptions = try #require(herald.apns.notifications(for: token).last)
            #expect(withOptions.headers["apns-priority"] == "1")
            #expect(withOptions.headers["apns-collapse-id"] == "score")
            expectHubError(
                try await server.send(
                    format: "apple", #"{"aps":{}}"#, query: "&direct",
                    headers: [("ServiceBusNotification-DeviceHandle", token), ("ServiceBusNotification-Priority", "asap")]), 400)

            // A browser: the endpoint as the handle, its keys in Auth and P256DH.
            let subscription = herald.webPush.subscribe()
            let browser = try await server.send(
                format: "browser", #"{"title":"direct"}"#, query: "&direct",
                headers: [
                    ("ServiceBusNotification-DeviceHandle", subscription.endpoint), ("Auth", subscription.auth), ("P256DH", subscription.p256dh),
                ]
            )
            let browserID = try server.acceptedID(browser)
            #expect(Self.count(try await server.finishedDetails(browserID), "BrowserOutcomeCounts") == 1)
            #expect(herald.webPush.notifications(for: subscription).last.map { ReceiptIDs.removed(from: $0.payload) } == #"{"title":"direct"}"#)

            // Without the handle, or a template: 400.
            expectHubError(try await server.send(format: "apple", #"{"aps":{}}"#, query: "&direct"), 400)
            expectHubError(
                try await server.send(format: "template", #"{"m":"x"}"#, query: "&direct", headers: [("ServiceBusNotification-DeviceHandle", token)]), 400
            )
            // A browser handle without its keys: 400.
            expectHubError(
                try await server.send(
                    format: "browser", "{}", query: "&direct", headers: [("ServiceBusNotification-DeviceHandle", subscription.endpoint)]
                ), 400
            )
        }
    }

    /// `POST /{hub}/messages/$batch?direct`: `multipart/mixed` with the notification and a
    /// JSON array of handles.
    @Test func batchDirectSendReachesEveryHandle() async throws {
        try await HubTestServer.withServer { server in
            let tokens = (0..<3).map { _ in server.herald.fcm.registerDevice() }
            let devices = try String(decoding: JSONSerialization.data(withJSONObject: tokens), as: UTF8.self)
            let boundary = "herald-batch-7d3f"
            let body = [
                "--\(boundary)",
                "Content-Type: application/json",
                #"Content-Disposition: inline; name="notification""#,
                "",
                #"{"message":{"data":{"batch":"yes"}}}"#,
                "--\(boundary)",
                "Content-Type: application/json",
                #"Content-Disposition: inline; name="devices""#,
                "",
                devices,
                "--\(boundary)--",
                "",
            ].joined(separator: "\r\n")
            let response = try await server.wire(
                .POST, "/\(Self.hub)/messages/$batch?\(Self.version)&direct",
                headers: [("Content-Type", "multipart/mixed; boundary=\"\(boundary)\""), ("ServiceBusNotification-Format", "fcmv1")],
                body: Data(body.utf8)
            )
            let id = try server.acceptedID(response)
            #expect(Self.count(try await server.finishedDetails(id), "FcmV1OutcomeCounts") == 3)
            for token in tokens {
                #expect(
                    ReceiptIDs.removed(from: try Self.fcmMessage(server.herald.fcm.notifications(for: token).last)["data"] as? [String: String]) == [
                        "batch": "yes"
                    ])
            }

            // Not multipart, or without the devices part: 400.
            let plain = try await server.wire(
                .POST, "/\(Self.hub)/messages/$batch?\(Self.version)&direct",
                headers: [("Content-Type", "application/json"), ("ServiceBusNotification-Format", "fcmv1")], body: Data("{}".utf8)
            )
            expectHubError(plain, 400)
            let onlyNotification = [
                "--\(boundary)", #"Content-Disposition: inline; name="notification""#, "", #"{"message":{}}"#, "--\(boundary)--", "",
            ].joined(separator: "\r\n")
            let missing = try await server.wire(
                .POST, "/\(Self.hub)/messages/$batch?\(Self.version)&direct",
                headers: [("Content-Type", "multipart/mixed; boundary=\(boundary)"), ("ServiceBusNotification-Format", "fcmv1")],
                body: Data(onlyNotification.utf8)
            )
            #expect(expectHubError(missing, 400).contains("devices"))
        }
    }

    /// `&test`: the outcome comes back at once, registration by registration.
    @Test func aTestSendAnswersWithTheOutcome() async throws {
        try await HubTestServer.withServer { server in
            let token = server.herald.apns.registerDevice(topic: TestHerald.topic)
            let (appleID, _) = try await server.createRegistration(
                Atom.open("AppleRegistrationDescription") + "<Tags>testers</Tags><DeviceToken>\(token)</DeviceToken></AppleRegistrationDescription>"
            )
            _ = try await server.createRegistration(
                Atom.open("FcmV1RegistrationDescription")
                    + "<Tags>others</Tags><FcmV1RegistrationId>\(server.herald.fcm.registerDevice())</FcmV1RegistrationId></FcmV1RegistrationDescription>"
            )
            let response = try await server.send(format: "apple", #"{"aps":{"alert":"test"}}"#, tags: "testers", query: "&test")
            #expect(response.status == 201, "\(response.text)")
            #expect(response.header("Location") != nil)
            let outcome = try response.xml()
            #expect(outcome.name == "NotificationOutcome")
            #expect(outcome.childNames == ["Success", "Failure", "Results"])
            #expect(outcome.value("Success") == "1")
            #expect(outcome.value("Failure") == "0")
            let results = try #require(outcome.child("Results")).children
            #expect(results.map(\.name) == ["RegistrationResult"])
            let result = try #require(results.first)
            #expect(result.childNames == ["ApplicationPlatform", "PnsHandle", "RegistrationId", "Outcome"])
            #expect(result.value("ApplicationPlatform") == "apple")
            #expect(result.value("PnsHandle")?.lowercased() == token)
            #expect(result.value("RegistrationId") == appleID)
            // The cloud hub words a success as a sentence; Herald names the outcome (`Success`).
            // Either way it is text the SDKs pass through.
            let succeeded = try #require(result.value("Outcome"))
            #expect(!succeeded.isEmpty)
            #expect(server.herald.apns.notifications(for: token).last.map { ReceiptIDs.removed(from: $0.payload) } == #"{"aps":{"alert":"test"}}"#)

            // A test send reaches at most 10 devices.
            for _ in 0..<12 {
                _ = try await server.createRegistration(
                    Atom.open("FcmV1RegistrationDescription")
                        + "<Tags>many</Tags><FcmV1RegistrationId>\(server.herald.fcm.registerDevice())</FcmV1RegistrationId></FcmV1RegistrationDescription>"
                )
            }
            let capped = try await server.send(format: "fcmv1", #"{"message":{"data":{"a":"b"}}}"#, tags: "many", query: "&test")
            let cappedOutcome = try capped.xml()
            #expect(cappedOutcome.child("Results")?.children("RegistrationResult").count == 10)
            #expect(cappedOutcome.value("Success") == "10")

            // A dead token is reported as a failure, with the push service's verdict.
            server.herald.apns.unregister(token: token)
            let failed = try await server.send(format: "apple", #"{"aps":{"alert":"again"}}"#, tags: "testers", query: "&test=true")
            let failure = try failed.xml()
            #expect(failure.value("Success") == "0" && failure.value("Failure") == "1")
            #expect(failure.at("Results", "RegistrationResult", "Outcome")?.text.isEmpty == false)
            #expect(failure.at("Results", "RegistrationResult", "Outcome")?.text != succeeded)
        }
    }

    @Test func scheduledSendsCanBeReadAndCancelled() async throws {
        try await HubTestServer.withServer { server in
            let token = server.herald.apns.registerDevice(topic: TestHerald.topic)
            _ = try await server.createRegistration(
                Atom.open("AppleRegistrationDescription") + "<Tags>later</Tags><DeviceToken>\(token)</DeviceToken></AppleRegistrationDescription>"
            )
            func schedule(at date: Date, _ alert: String) async throws -> WireResponse {
                let formatter = DateFormatter()
                formatter.locale = Locale(identifier: "en_US_POSIX")
                formatter.timeZone = TimeZone(identifier: "UTC")
                formatter.dateFormat = "yyyy-MM-dd'T'HH:mm:ss"
                return try await server.wire(
                    .POST, "/\(Self.hub)/schedulednotifications?\(Self.version)",
                    headers: [
                        ("ServiceBusNotification-Format", "apple"), ("ServiceBusNotification-Tags", "later"),
                        ("ServiceBusNotification-ScheduleTime", formatter.string(from: date)), ("Content-Type", "application/json"),
                    ],
                    body: Data(#"{"aps":{"alert":"\#(alert)"}}"#.utf8)
                )
            }

            // An hour ahead: Scheduled until cancelled, then Cancelled.
            let response = try await schedule(at: Date().addingTimeInterval(3600), "in an hour")
            let id = try server.acceptedID(response, under: "schedulednotifications")
            let scheduled = try await server.wire(.GET, "/\(Self.hub)/messages/\(id)?\(Self.version)")
            #expect(scheduled.status == 200)
            #expect(try scheduled.xml().value("State") == "Scheduled")
            let cancelled = try await server.wire(.DELETE, "/\(Self.hub)/schedulednotifications/\(id)?\(Self.version)")
            #expect(cancelled.status == 200, "\(cancelled.text)")
            #expect(try await server.wire(.GET, "/\(Self.hub)/messages/\(id)?\(Self.version)").xml().value("State") == "Cancelled")
            // Cancelling it again is a conflict; an id the hub never gave is 404.
            expectHubError(try await server.wire(.DELETE, "/\(Self.hub)/schedulednotifications/\(id)?\(Self.version)"), 409)
            expectHubError(try await server.wire(.DELETE, "/\(Self.hub)/schedulednotifications/no-such-id?\(Self.version)"), 404)

            // A second ahead: it goes out once due.
            let soon = try server.acceptedID(try await schedule(at: Date().addingTimeInterval(1), "now"), under: "schedulednotifications")
            var state = ""
            for _ in 0..<600 where state != "Completed" {
                try await Task.sleep(for: .milliseconds(50))
                state = try await server.wire(.GET, "/\(Self.hub)/messages/\(soon)?\(Self.version)").xml().value("State") ?? ""
            }
            #expect(state == "Completed")
            #expect(server.herald.apns.notifications(for: token).map { ReceiptIDs.removed(from: $0.payload) } == [#"{"aps":{"alert":"now"}}"#])

            // Without a time, or with one that is not a time: 400.
            let noTime = try await server.wire(
                .POST, "/\(Self.hub)/schedulednotifications?\(Self.version)",
                headers: [("ServiceBusNotification-Format", "apple")], body: Data(#"{"aps":{}}"#.utf8)
            )
            #expect(expectHubError(noTime, 400).contains("ServiceBusNotification-ScheduleTime"))
            let badTime = try await server.wire(
                .POST, "/\(Self.hub)/schedulednotifications?\(Self.version)",
                headers: [("ServiceBusNotification-Format", "apple"), ("ServiceBusNotification-ScheduleTime", "tomorrow")],
                body: Data(#"{"aps":{}}"#.utf8)
            )
            expectHubError(badTime, 400)
        }
    }

    /// The JavaScript SDK's requests as it writes them: paths with a trailing `/`
    /// (`messages/`, `schedulednotifications/`), flags with values (`test=true`,
    /// `direct=true`), ISO times with milliseconds, and its own multipart layout (`boundary =
    /// "…"`, unquoted part names, no line break after the closing delimiter).
    @Test func theJavaScriptSDKsSendRequests() async throws {
        try await HubTestServer.withServer { server in
            let token = server.herald.apns.registerDevice(topic: TestHerald.topic)
            _ = try await server.createRegistration(
                Atom.open("AppleRegistrationDescription") + "<Tags>js</Tags><DeviceToken>\(token)</DeviceToken></AppleRegistrationDescription>"
            )
            let headers = [
                ("ServiceBusNotification-Format", "apple"), ("ServiceBusNotification-Tags", "js"), ("Content-Type", "application/json;charset=UTF-8"),
                ("x-ms-version", "2020-06"), ("apns-push-type", "alert"),
            ]
            let body = Data(#"{"aps":{"alert":"from js"}}"#.utf8)

            let sent = try await server.wire(
                .POST, "/\(Self.hub)/messages/?\(Self.version)", headers: headers, body: body,
                auth: .rule(SharedAccessRule.defaultFullRuleName, style: .javaScript))
            let id = try server.acceptedID(sent)
            #expect(try await server.finishedDetails(id).value("State") == "Completed")

            let test = try await server.wire(
                .POST, "/\(Self.hub)/messages/?\(Self.version)&test=true", headers: headers, body: body,
                auth: .rule(SharedAccessRule.defaultFullRuleName, style: .javaScript))
            #expect(test.status == 201, "\(test.text)")
            #expect(try test.xml().value("Success") == "1")

            let iso = ISO8601DateFormatter()
            iso.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            let scheduled = try await server.wire(
                .POST, "/\(Self.hub)/schedulednotifications/?\(Self.version)",
                headers: headers + [("ServiceBusNotification-ScheduleTime", iso.string(from: Date().addingTimeInterval(3600)))], body: body,
                auth: .rule(SharedAccessRule.defaultFullRuleName, style: .javaScript)
            )
            let scheduledID = try server.acceptedID(scheduled, under: "schedulednotifications")
            #expect(try await server.wire(.GET, "/\(Self.hub)/messages/\(scheduledID)?\(Self.version)").xml().value("State") == "Scheduled")

            let tokens = (0..<3).map { _ in server.herald.fcm.registerDevice() }
            let boundary = "nh-boundary-\(UUID().uuidString.lowercased())"
            let multipart =
                "--\(boundary)\r\nContent-type: application/json;charset=UTF-8\r\nContent-Disposition: inline; name=notification\r\n\r\n"
                + #"{"message":{"data":{"js":"batch"}}}"#
                + "\r\n--\(boundary)\r\nContent-type: application/json\r\nContent-Disposition: inline; name=devices\r\n\r\n"
                + String(decoding: try JSONSerialization.data(withJSONObject: tokens), as: UTF8.self) + "\r\n--\(boundary)--"
            let batch = try await server.wire(
                .POST, "/\(Self.hub)/messages/$batch?\(Self.version)&direct=true",
                headers: [("ServiceBusNotification-Format", "fcmv1"), ("Content-Type", "multipart/mixed; boundary = \"\(boundary)\"")],
                body: Data(multipart.utf8), auth: .rule(SharedAccessRule.defaultFullRuleName, style: .javaScript)
            )
            let batchID = try server.acceptedID(batch)
            #expect(Self.count(try await server.finishedDetails(batchID), "FcmV1OutcomeCounts") == 3)
            for token in tokens {
                #expect(
                    ReceiptIDs.removed(from: try Self.fcmMessage(server.herald.fcm.notifications(for: token).last)["data"] as? [String: String]) == [
                        "js": "batch"
                    ])
            }
        }
    }

    @Test func detailsOfAnUnknownNotificationAre404() async throws {
        try await HubTestServer.withServer { server in
            expectHubError(try await server.wire(.GET, "/\(Self.hub)/messages/no-such-notification?\(Self.version)"), 404)
            // Reading details takes the Send right.
            let id = try server.acceptedID(try await server.send(format: "apple", #"{"aps":{}}"#, tags: "nobody"))
            expectHubError(try await server.wire(.GET, "/\(Self.hub)/messages/\(id)?\(Self.version)", auth: .listen), 403)
            let details = try await server.finishedDetails(id)
            #expect(details.value("State") == "NoTargetFound")
        }
    }

    /// `ServiceBusNotification-Spread: 2`: the tag's devices get it over about 2 seconds, each
    /// once; a spread that is not whole seconds, or too long, is a 400 that enqueues nothing.
    @Test func aSendSpreadOverSecondsReachesItsDevicesOverThem() async throws {
        try await HubTestServer.withServer { server in
            let herald = server.herald
            let tokens = (0..<12).map { _ in herald.apns.registerDevice(topic: TestHerald.topic) }
            for token in tokens {
                _ = try await server.createRegistration(
                    Atom.open("AppleRegistrationDescription") + "<Tags>spread</Tags><DeviceToken>\(token)</DeviceToken></AppleRegistrationDescription>")
            }
            for bad in ["soon", "0", "1.5", "86400"] {
                let message = expectHubError(
                    try await server.send(format: "apple", #"{"aps":{"alert":"x"}}"#, tags: "spread", headers: [("ServiceBusNotification-Spread", bad)]), 400)
                #expect(message.contains("spread"), "\(bad): \(message)")
            }
            #expect(tokens.allSatisfy { herald.apns.notifications(for: $0).isEmpty }, "the refused sends sent nothing")

            let start = ContinuousClock.now
            let id = try server.acceptedID(
                try await server.send(format: "apple", #"{"aps":{"alert":"slowly"}}"#, tags: "spread", headers: [("ServiceBusNotification-Spread", "2")]))
            let details = try await server.finishedDetails(id)
            let took = ContinuousClock.now - start
            #expect(Self.count(details, "ApnsOutcomeCounts") == 12)
            // 12 over 2 s: one every 1/6 s, the last due at about 1.8 s.
            #expect(took >= .milliseconds(1600), "12 devices spread over 2 s were reached in \(took)")
            #expect(tokens.allSatisfy { herald.apns.notifications(for: $0).count == 1 }, "each device once")
        }
    }
}
