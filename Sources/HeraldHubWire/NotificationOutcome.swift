public import Foundation
public import HeraldCore

/// The result of a test send (`?test`): how many devices it reached and failed, and the
/// outcome for each (a test send reaches at most ten).
///
/// ```xml
/// <NotificationOutcome xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect"
///     xmlns:i="http://www.w3.org/2001/XMLSchema-instance">
///   <Success>1</Success><Failure>0</Failure>
///   <Results><RegistrationResult><ApplicationPlatform>apple</ApplicationPlatform>
///     <PnsHandle>…</PnsHandle><RegistrationId>…</RegistrationId><Outcome>Success</Outcome>
///   </RegistrationResult></Results>
/// </NotificationOutcome>
/// ```
public struct NotificationOutcome: Sendable, Hashable {
    /// The outcome for one device.
    public struct Result: Sendable, Hashable {
        /// The platform as the hub API names it: `apple`, `gcm`, `fcmv1`, `windows`, `browser`
        /// (see ``HubFormat/name``).
        public var platform: String
        public var pnsHandle: String
        public var registrationId: String
        public var outcome: String

        public init(platform: String, pnsHandle: String, registrationId: String, outcome: String) {
            self.platform = platform
            self.pnsHandle = pnsHandle
            self.registrationId = registrationId
            self.outcome = outcome
        }
    }

    public var success: Int
    public var failure: Int
    public var results: [Result]

    public init(success: Int, failure: Int, results: [Result] = []) {
        self.success = success
        self.failure = failure
        self.results = results
    }

    /// The document, as the service sends it. `Results` is always present, empty or not.
    public func xml() -> Data {
        var xml = WireXMLWriter()
        xml.start("NotificationOutcome", attributes: HubWireNamespace.descriptionAttributes)
        xml.element("Success", String(success))
        xml.element("Failure", String(failure))
        if results.isEmpty {
            xml.empty("Results")
        } else {
            xml.start("Results")
            for result in results {
                xml.start("RegistrationResult")
                xml.element("ApplicationPlatform", result.platform)
                xml.element("PnsHandle", result.pnsHandle)
                xml.element("RegistrationId", result.registrationId)
                xml.element("Outcome", result.outcome)
                xml.end()
            }
            xml.end()
        }
        xml.end()
        return xml.data
    }

    /// Reads the document; element order and namespace prefixes do not matter.
    ///
    /// - Throws: a `400` ``HeraldError`` for malformed XML, another root element, or a
    ///   `Success` or `Failure` that is missing or not a whole number.
    public init(xml data: Data) throws(HeraldError) {
        let root = try ParsedXMLElement.parse(data, document: "notification outcome")
        guard root.name == "NotificationOutcome" else {
            throw .badRequest("expected a <NotificationOutcome> document; found <\(root.name)>")
        }
        func count(_ name: String) throws(HeraldError) -> Int {
            guard let text = root.value(name), let value = Int(text), value >= 0 else {
                throw .badRequest("NotificationOutcome needs a \(name) element with a whole number")
            }
            return value
        }
        let results = (root.child("Results")?.children("RegistrationResult") ?? []).map { element in
            Result(
                platform: element.value("ApplicationPlatform") ?? "",
                pnsHandle: element.value("PnsHandle") ?? "",
                registrationId: element.value("RegistrationId") ?? "",
                outcome: element.value("Outcome") ?? ""
            )
        }
        self.init(success: try count("Success"), failure: try count("Failure"), results: results)
    }
}
