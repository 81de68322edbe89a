public import Foundation
public import HeraldCore

/// The telemetry of one notification, as `GET /{hub}/messages/{id}` returns it: state,
/// times, body, target and outcome counts per platform.
///
/// ```xml
/// <NotificationDetails xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect"
///     xmlns:i="http://www.w3.org/2001/XMLSchema-instance">
///   <NotificationId>…</NotificationId><Location>…</Location><State>Completed</State>
///   <EnqueueTime>…</EnqueueTime>…<ApnsOutcomeCounts><Outcome><Name>Success</Name><Count>3</Count>
///   </Outcome></ApnsOutcomeCounts>…
/// </NotificationDetails>
/// ```
///
/// Members are written in the order of the .NET SDK's data contract, which skips members
/// that come out of order: `NotificationId`, `Location`, `State`, `EnqueueTime`, `StartTime`,
/// `EndTime`, `NotificationBody`, `Tags`, `TargetPlatforms`, `ApnsOutcomeCounts`,
/// `WnsOutcomeCounts`, `PnsErrorDetailsUri`, `FcmV1OutcomeCounts`, `BrowserOutcomeCounts`.
/// FCM counts are reported as `FcmV1OutcomeCounts`; `GcmOutcomeCounts` and `FcmOutcomeCounts`
/// are read as FCM too.
public struct NotificationDetails: Sendable, Hashable {
    public var id: String
    /// The notification's URL (`…/messages/{id}`).
    public var location: String
    public var state: NotificationState
    public var enqueueTime: Date?
    public var startTime: Date?
    public var endTime: Date?
    /// The notification's body: a native payload's text, or a template send's properties as JSON.
    public var body: String?
    /// The tag expression it was sent to; `nil` for a broadcast.
    public var tags: String?
    /// The platforms it was sent to.
    public var targetPlatforms: [Platform]
    public var counts: OutcomeCounts
    /// How many devices confirmed the notification, per platform (Herald's receipts): written
    /// as the outcome `Confirmed` among the platform's counts. A device that confirmed is
    /// counted in `Success` as well.
    public var confirmed: [Platform: Int] = [:]
    /// Where per-device push-service errors can be read; Herald sets none.
    public var pnsErrorDetailsUri: String?

    public init(
        id: String,
        location: String,
        state: NotificationState,
        enqueueTime: Date? = nil,
        startTime: Date? = nil,
        endTime: Date? = nil,
        body: String? = nil,
        tags: String? = nil,
        targetPlatforms: [Platform] = [],
        counts: OutcomeCounts = OutcomeCounts(),
        pnsErrorDetailsUri: String? = nil
    ) {
        self.id = id
        self.location = location
        self.state = state
        self.enqueueTime = enqueueTime
        self.startTime = startTime
        self.endTime = endTime
        self.body = body
        self.tags = tags
        self.targetPlatforms = targetPlatforms
        self.counts = counts
        self.pnsErrorDetailsUri = pnsErrorDetailsUri
    }

    /// The details of a recorded notification.
    ///
    /// The body is the text of the first payload, or for a template send its properties as
    /// a JSON object (keys sorted). The target platforms are those of the payloads, of the
    /// direct targets and of the outcomes counted so far.
    public init(_ record: NotificationRecord, location: String) {
        var platforms = Set(record.payloads.map(\.platform))
        platforms.formUnion(record.directTargets?.map(\.platform) ?? [])
        platforms.formUnion(record.counts.counts.filter { !$0.value.isEmpty }.keys)
        let body: String?
        if let payload = record.payloads.first {
            body = String(decoding: payload.body, as: UTF8.self)
        } else if let template = record.template {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            body = (try? encoder.encode(template.properties)).map { String(decoding: $0, as: UTF8.self) }
        } else {
            body = nil
        }
        self.init(
            id: record.id,
            location: location,
            state: record.state,
            enqueueTime: record.enqueuedAt,
            startTime: record.startedAt,
            endTime: record.endedAt,
            body: body,
            tags: record.tagExpression,
            targetPlatforms: Platform.allCases.filter(platforms.contains),
            counts: record.counts
        )
    }

    /// The document, as the service sends it.
    public func xml() -> Data {
        var xml = WireXMLWriter()
        xml.start("NotificationDetails", attributes: HubWireNamespace.descriptionAttributes)
        xml.element("NotificationId", id)
        xml.element("Location", location)
        xml.element("State", state.rawValue)
        xml.element("EnqueueTime", ifPresent: enqueueTime.map { XSDDateTime.string(from: $0, precision: .milliseconds) })
        xml.element("StartTime", ifPresent: startTime.map { XSDDateTime.string(from: $0, precision: .milliseconds) })
        xml.element("EndTime", ifPresent: endTime.map { XSDDateTime.string(from: $0, precision: .milliseconds) })
        xml.element("NotificationBody", ifPresent: body)
        xml.element("Tags", ifPresent: tags)
        if !targetPlatforms.isEmpty {
            xml.element("TargetPlatforms", targetPlatforms.map { HubFormat.native($0).name }.joined(separator: ","))
        }
        writeCounts(.apns, as: "ApnsOutcomeCounts", into: &xml)
        writeCounts(.wns, as: "WnsOutcomeCounts", into: &xml)
        xml.element("PnsErrorDetailsUri", ifPresent: pnsErrorDetailsUri)
        writeCounts(.fcm, as: "FcmV1OutcomeCounts", into: &xml)
        writeCounts(.webpush, as: "BrowserOutcomeCounts", into: &xml)
        xml.end()
        return xml.data
    }

    /// Reads the document; element order and namespace prefixes do not matter.
    ///
    /// - Throws: a `400` ``HeraldError`` for malformed XML, another root element, a missing
    ///   `NotificationId` or `State`, an unknown state, an unreadable time or count.
    public init(xml data: Data) throws(HeraldError) {
        let root = try ParsedXMLElement.parse(data, document: "notification details")
        guard root.name == "NotificationDetails" else {
            throw .badRequest("expected a <NotificationDetails> document; found <\(root.name)>")
        }
        guard let id = root.nonEmptyValue("NotificationId") else {
            throw .badRequest("NotificationDetails has no NotificationId element")
        }
        guard let stateName = root.nonEmptyValue("State") else {
            throw .badRequest("NotificationDetails has no State element")
        }
        guard let state = NotificationState.allCases.first(where: { $0.rawValue.lowercased() == stateName.lowercased() })
        else {
            throw .badRequest(
                "State '\(stateName.prefix(40))' is not one of \(NotificationState.allCases.map(\.rawValue).joined(separator: ", "))"
            )
        }
        func time(_ name: String) throws(HeraldError) -> Date? {
            guard let text = root.nonEmptyValue(name) else { return nil }
            guard let date = XSDDateTime.date(from: text) else {
                throw .badRequest("\(name) '\(text.prefix(40))' is not an xsd:dateTime such as 2030-01-31T12:00:00Z")
            }
            return date
        }
        var counts = OutcomeCounts()
        var confirmed: [Platform: Int] = [:]
        let countElements: [(String, Platform)] = [
            ("ApnsOutcomeCounts", .apns), ("WnsOutcomeCounts", .wns), ("GcmOutcomeCounts", .fcm),
            ("FcmOutcomeCounts", .fcm), ("FcmV1OutcomeCounts", .fcm), ("BrowserOutcomeCounts", .webpush),
        ]
        for (name, platform) in countElements {
            guard let list = root.child(name) else { continue }
            for outcome in list.children("Outcome") {
                guard let outcomeName = outcome.nonEmptyValue("Name") else {
                    throw .badRequest("each Outcome in \(name) needs a Name element")
                }
                guard let text = outcome.value("Count"), let count = Int(text), count >= 0 else {
                    throw .badRequest("the Count of outcome '\(outcomeName.prefix(40))' in \(name) is not a whole number")
                }
                if outcomeName == Receipt.outcomeName {
                    confirmed[platform, default: 0] += count
                } else {
                    counts.add(DeliveryOutcome(rawValue: outcomeName), platform: platform, count: count)
                }
            }
        }
        let platforms = Set(
            (root.value("TargetPlatforms") ?? "").split(separator: ",").compactMap { name in
                try? Platform(parsing: name.trimmingSpaces())
            }
        )
        self.init(
            id: id,
            location: root.value("Location") ?? "",
            state: state,
            enqueueTime: try time("EnqueueTime"),
            startTime: try time("StartTime"),
            endTime: try time("EndTime"),
            body: root.child("NotificationBody").flatMap { $0.isNil ? nil : $0.text },
            tags: root.value("Tags"),
            targetPlatforms: Platform.allCases.filter(platforms.contains),
            counts: counts,
            pnsErrorDetailsUri: root.nonEmptyValue("PnsErrorDetailsUri")
        )
        self.confirmed = confirmed
    }

    private func writeCounts(_ platform: Platform, as name: String, into xml: inout WireXMLWriter) {
        var outcomes = counts.counts[platform] ?? [:]
        if let confirmed = confirmed[platform], confirmed > 0 { outcomes[DeliveryOutcome(rawValue: Receipt.outcomeName)] = confirmed }
        guard !outcomes.isEmpty else { return }
        xml.start(name)
        for (outcome, count) in outcomes.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            xml.start("Outcome")
            xml.element("Name", outcome.rawValue)
            xml.element("Count", String(count))
            xml.end()
        }
        xml.end()
    }
}
