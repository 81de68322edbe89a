public import Foundation
public import HeraldCore

/// The body of a hub API error: `<Error><Code>401</Code><Detail>…</Detail></Error>`, with no
/// namespace, as the service sends it.
public struct HubErrorDocument: Sendable, Hashable {
    /// The HTTP status code.
    public var status: Int
    /// What went wrong; the service appends `TrackingId:…,TimeStamp:…`.
    public var detail: String

    public init(status: Int, detail: String) {
        self.status = status
        self.detail = detail
    }

    public func xml() -> Data {
        var xml = WireXMLWriter()
        xml.start("Error")
        xml.element("Code", String(status))
        xml.element("Detail", detail)
        xml.end()
        return xml.data
    }

    /// Reads the document.
    ///
    /// - Throws: a `400` ``HeraldError`` for malformed XML, another root element, or a `Code`
    ///   that is missing or not a number.
    public init(xml data: Data) throws(HeraldError) {
        let root = try ParsedXMLElement.parse(data, document: "error document")
        guard root.name == "Error" else {
            throw .badRequest("expected an <Error> document; found <\(root.name)>")
        }
        guard let text = root.value("Code"), let status = Int(text) else {
            throw .badRequest("the Error document needs a Code element with the HTTP status")
        }
        self.init(status: status, detail: root.child("Detail").map(\.text) ?? "")
    }
}
