import Foundation
import HeraldCore
import Testing

@testable import HeraldHubWire

@Suite("Hub wire: notification details, outcomes, errors")
struct HubWireDocumentTests {
    static let root =
        #"xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect" xmlns:i="http://www.w3.org/2001/XMLSchema-instance""#

    static func record() -> NotificationRecord {
        var counts = OutcomeCounts()
        counts.add(.success, platform: .apns, count: 3)
        counts.add(.expiredChannel, platform: .apns)
        counts.add(.success, platform: .fcm, count: 2)
        counts.add(.wrongToken, platform: .fcm)
        counts.add(.success, platform: .webpush)
        return NotificationRecord(
            id: "n-1",
            tagExpression: "sports && !muted",
            payloads: [
                PlatformPayload(platform: .apns, body: Data(#"{"aps":{"alert":"Hi <you> & me"}}"#.utf8)),
                PlatformPayload(platform: .fcm, body: Data(#"{"notification":{"body":"Hi"}}"#.utf8)),
            ],
            state: .completed,
            counts: counts,
            enqueuedAt: Date(timeIntervalSince1970: 1_446_499_183),
            startedAt: Date(timeIntervalSince1970: 1_446_499_183.5),
            endedAt: Date(timeIntervalSince1970: 1_446_499_184.25)
        )
    }

    @Test func detailsOfARecordAsTheServiceWritesThem() {
        let details = NotificationDetails(Self.record(), location: "https://h/hub/messages/n-1?api-version=2020-06")
        let text = String(decoding: details.xml(), as: UTF8.self)
        #expect(
            text
                == "<NotificationDetails \(Self.root)><NotificationId>n-1</NotificationId>"
                + "<Location>https://h/hub/messages/n-1?api-version=2020-06</Location><State>Completed</State>"
                + "<EnqueueTime>2015-11-02T21:19:43Z</EnqueueTime><StartTime>2015-11-02T21:19:43.5Z</StartTime>"
                + "<EndTime>2015-11-02T21:19:44.25Z</EndTime>"
                + "<NotificationBody>{&quot;aps&quot;:{&quot;alert&quot;:&quot;Hi &lt;you&gt; &amp; me&quot;}}</NotificationBody>"
                + "<Tags>sports &amp;&amp; !muted</Tags><TargetPlatforms>apple,fcmv1,browser</TargetPlatforms>"
                + "<ApnsOutcomeCounts><Outcome><Name>ExpiredChannel</Name><Count>1</Count></Outcome>"
                + "<Outcome><Name>Success</Name><Count>3</Count></Outcome></ApnsOutcomeCounts>"
                + "<FcmV1OutcomeCounts><Outcome><Name>Success</Name><Count>2</Count></Outcome>"
                + "<Outcome><Name>WrongToken</Name><Count>1</Count></Outcome></FcmV1OutcomeCounts>"
                + "<BrowserOutcomeCounts><Outcome><Name>Success</Name><Count>1</Count></Outcome></BrowserOutcomeCounts>"
                + "</NotificationDetails>"
        )
    }

    @Test func detailsRoundTrip() throws {
        var details = NotificationDetails(Self.record(), location: "https://h/hub/messages/n-1")
        details.pnsErrorDetailsUri = "https://blob.example/errors?sig=a&b"
        details.counts.add(.throttled, platform: .wns, count: 4)
        details.targetPlatforms = Platform.allCases
        let back = try NotificationDetails(xml: details.xml())
        #expect(back == details)
    }

    @Test func detailsMembersFollowTheDataContractOrder() throws {
        var details = NotificationDetails(Self.record(), location: "l")
        details.pnsErrorDetailsUri = "u"
        details.counts.add(.success, platform: .wns)
        let root = try ParsedXMLElement.parse(details.xml(), document: "t")
        #expect(
            root.children.map(\.name) == [
                "NotificationId", "Location", "State", "EnqueueTime", "StartTime", "EndTime", "NotificationBody",
                "Tags", "TargetPlatforms", "ApnsOutcomeCounts", "WnsOutcomeCounts", "PnsErrorDetailsUri",
                "FcmV1OutcomeCounts", "BrowserOutcomeCounts",
            ]
        )
    }

    @Test func detailsOfATemplateSendCarryItsPropertiesAsJSON() throws {
        let record = NotificationRecord(
            id: "n-2", tagExpression: nil, payloads: [],
            template: TemplateSend(properties: ["message": "Hi/there", "badge": "3"]),
            state: .scheduled, enqueuedAt: Date(timeIntervalSince1970: 0)
        )
        let details = NotificationDetails(record, location: "l")
        #expect(details.body == #"{"badge":"3","message":"Hi/there"}"#)
        #expect(details.tags == nil)
        #expect(details.targetPlatforms == [])
        let root = try ParsedXMLElement.parse(details.xml(), document: "t")
        #expect(root.children.map(\.name) == ["NotificationId", "Location", "State", "EnqueueTime", "NotificationBody"])
        #expect(root.value("State") == "Scheduled")
        #expect(root.value("EnqueueTime") == "1970-01-01T00:00:00Z")
    }

    @Test func detailsOfADirectSendNameItsPlatform() {
        let record = NotificationRecord(
            id: "n-3", tagExpression: nil, payloads: [PlatformPayload(platform: .wns, body: Data("<toast/>".utf8))],
            directTargets: [DirectTarget(platform: .wns, handle: "https://wns.example/c")]
        )
        #expect(NotificationDetails(record, location: "l").targetPlatforms == [.wns])
    }

    @Test func readsDetailsAsAnSDKFixtureShapesThem() throws {
        let body = """
            <NotificationDetails xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect" xmlns:i="http://www.w3.org/2001/XMLSchema-instance">
              <NotificationId>abc</NotificationId>
              <Location>sb://ns.servicebus.windows.net/hub/messages/abc?api-version=2015-04</Location>
              <State>completed</State>
              <EnqueueTime>2015-11-02T21:19:43Z</EnqueueTime>
              <StartTime>2015-11-02T21:19:43.9926996Z</StartTime>
              <EndTime>2015-11-02T21:19:43.9926996Z</EndTime>
              <NotificationBody>{"message":{"alert":"hello"}}</NotificationBody>
              <TargetPlatforms>windows, gcm, apple, adm</TargetPlatforms>
              <GcmOutcomeCounts>
                <Outcome><Name>Success</Name><Count>3</Count></Outcome>
              </GcmOutcomeCounts>
              <FcmV1OutcomeCounts>
                <Outcome><Name>Success</Name><Count>1</Count></Outcome>
                <Outcome><Name>WrongToken</Name><Count>1</Count></Outcome>
              </FcmV1OutcomeCounts>
              <AdmOutcomeCounts><Outcome><Name>Success</Name><Count>9</Count></Outcome></AdmOutcomeCounts>
              <PnsErrorDetailsUri>{Blob uri}</PnsErrorDetailsUri>
            </NotificationDetails>
            """
        let details = try NotificationDetails(xml: Data(body.utf8))
        #expect(details.id == "abc")
        #expect(details.state == .completed)
        #expect(details.enqueueTime == Date(timeIntervalSince1970: 1_446_499_183))
        let start = try #require(details.startTime?.timeIntervalSince1970)
        #expect(abs(start - 1_446_499_183.992_699_6) < 0.000_001)
        #expect(details.body == #"{"message":{"alert":"hello"}}"#)
        #expect(details.targetPlatforms == [.apns, .fcm, .wns])
        #expect(details.counts.counts == [.fcm: [.success: 4, .wrongToken: 1]])
        #expect(details.pnsErrorDetailsUri == "{Blob uri}")
        #expect(details.tags == nil)
    }

    static let invalidDetails: [(body: String, message: String)] = [
        ("<NotificationOutcome/>", "expected a <NotificationDetails> document; found <NotificationOutcome>"),
        ("<NotificationDetails><State>Completed</State></NotificationDetails>", "NotificationDetails has no NotificationId element"),
        ("<NotificationDetails><NotificationId>a</NotificationId></NotificationDetails>", "NotificationDetails has no State element"),
        (
            "<NotificationDetails><NotificationId>a</NotificationId><State>Lost</State></NotificationDetails>",
            "State 'Lost' is not one of Enqueued, Processing, Completed, Abandoned, NoTargetFound, Scheduled, Cancelled"
        ),
        (
            "<NotificationDetails><NotificationId>a</NotificationId><State>Completed</State><EndTime>soon</EndTime></NotificationDetails>",
            "EndTime 'soon' is not an xsd:dateTime such as 2030-01-31T12:00:00Z"
        ),
        (
            "<NotificationDetails><NotificationId>a</NotificationId><State>Completed</State><WnsOutcomeCounts><Outcome><Name>Success</Name><Count>x</Count></Outcome></WnsOutcomeCounts></NotificationDetails>",
            "the Count of outcome 'Success' in WnsOutcomeCounts is not a whole number"
        ),
        (
            "<NotificationDetails><NotificationId>a</NotificationId><State>Completed</State><WnsOutcomeCounts><Outcome><Count>1</Count></Outcome></WnsOutcomeCounts></NotificationDetails>",
            "each Outcome in WnsOutcomeCounts needs a Name element"
        ),
        ("<NotificationDetails>", "the notification details is not well-formed XML"),
    ]

    @Test(arguments: invalidDetails)
    func refusesBrokenDetails(_ c: (body: String, message: String)) {
        let error = #expect(throws: HeraldError.self) { try NotificationDetails(xml: Data(c.body.utf8)) }
        #expect(error?.code == .badRequest)
        #expect(error?.message.hasPrefix(c.message) == true, "\(error?.message ?? "-")")
    }

    // MARK: Outcome

    @Test func outcomeAsTheServiceWritesIt() throws {
        let outcome = NotificationOutcome(
            success: 1, failure: 1,
            results: [
                .init(platform: "apple", pnsHandle: "AB01", registrationId: "1-2-3", outcome: "Success"),
                .init(platform: "browser", pnsHandle: "https://p.example/?a&b", registrationId: "4-5-6", outcome: "ExpiredChannel"),
            ]
        )
        #expect(
            String(decoding: outcome.xml(), as: UTF8.self)
                == "<NotificationOutcome \(Self.root)><Success>1</Success><Failure>1</Failure><Results>"
                + "<RegistrationResult><ApplicationPlatform>apple</ApplicationPlatform><PnsHandle>AB01</PnsHandle>"
                + "<RegistrationId>1-2-3</RegistrationId><Outcome>Success</Outcome></RegistrationResult>"
                + "<RegistrationResult><ApplicationPlatform>browser</ApplicationPlatform>"
                + "<PnsHandle>https://p.example/?a&amp;b</PnsHandle><RegistrationId>4-5-6</RegistrationId>"
                + "<Outcome>ExpiredChannel</Outcome></RegistrationResult></Results></NotificationOutcome>"
        )
        #expect(try NotificationOutcome(xml: outcome.xml()) == outcome)
    }

    @Test func outcomeWithoutResultsStillHasResults() throws {
        let outcome = NotificationOutcome(success: 0, failure: 0)
        #expect(
            String(decoding: outcome.xml(), as: UTF8.self)
                == "<NotificationOutcome \(Self.root)><Success>0</Success><Failure>0</Failure><Results/></NotificationOutcome>"
        )
        #expect(try NotificationOutcome(xml: outcome.xml()) == outcome)
    }

    @Test func outcomeNamesPlatformsAsTheService() {
        #expect(HubFormat.native(.apns).name == "apple")
        #expect(HubFormat.native(.fcm).name == "fcmv1")
        #expect(HubFormat.native(.fcm, legacyGCM: true).name == "gcm")
        #expect(HubFormat.native(.wns).name == "windows")
        #expect(HubFormat.native(.webpush).name == "browser")
        #expect(HubFormat.template.name == "template")
    }

    @Test func outcomeNeedsItsCounts() {
        let error = #expect(throws: HeraldError.self) {
            try NotificationOutcome(xml: Data("<NotificationOutcome><Success>1</Success></NotificationOutcome>".utf8))
        }
        #expect(error?.message == "NotificationOutcome needs a Failure element with a whole number")
        let root = #expect(throws: HeraldError.self) { try NotificationOutcome(xml: Data("<Error/>".utf8)) }
        #expect(root?.message == "expected a <NotificationOutcome> document; found <Error>")
    }

    // MARK: Error

    @Test func errorDocument() throws {
        let document = HubErrorDocument(status: 401, detail: "ExpiredToken: <sig> & more. TrackingId:t-1,TimeStamp:1/2/2024")
        #expect(
            String(decoding: document.xml(), as: UTF8.self)
                == "<Error><Code>401</Code><Detail>ExpiredToken: &lt;sig&gt; &amp; more. TrackingId:t-1,TimeStamp:1/2/2024</Detail></Error>"
        )
        #expect(try HubErrorDocument(xml: document.xml()) == document)
        let error = #expect(throws: HeraldError.self) {
            try HubErrorDocument(xml: Data("<Error><Detail>x</Detail></Error>".utf8))
        }
        #expect(error?.message == "the Error document needs a Code element with the HTTP status")
    }
}
