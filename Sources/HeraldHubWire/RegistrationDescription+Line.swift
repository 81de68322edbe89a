import Foundation
public import HeraldCore

extension RegistrationDescription {
    /// A registration as one line of an export or import file: the bare description element
    /// (no Atom entry), with `ETag`, `ExpirationTime` and `RegistrationId`, as the cloud hub's
    /// export writes it and its import reads it. ``parse(_:)`` reads such a line back.
    ///
    /// The line holds no line break: one in a template body or a value is written as the
    /// character reference `&#10;` (a template body is written as text rather than CDATA when it
    /// holds one), which parses back to the same text.
    public static func line(_ r: Registration) -> String {
        var xml = WireXMLWriter()
        writeDescription(r, response: true, into: &xml, bodyAsText: r.template?.body.contains(where: \.isNewline) ?? false)
        let text = String(decoding: xml.data, as: UTF8.self)
        guard text.utf8.contains(UInt8(ascii: "\n")) else { return text }
        // Outside CDATA (bodies with line breaks are text here), a raw line feed can only be
        // character data, where its reference stands for it; carriage returns are written as
        // references already.
        return text.replacingOccurrences(of: "\n", with: "&#10;")
    }
}
