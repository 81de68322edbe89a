/// A template body with expressions, parsed once and rendered per device.
///
/// A template registration carries one; a template send's properties fill it in. The body
/// is a JSON document (APNs, FCM, Web Push) or an XML document (WNS toast, tile, badge), and
/// expressions may appear only in JSON string values (never in keys) and in XML text, CDATA
/// sections and attribute values:
///
/// | Expression | Result |
/// |---|---|
/// | `$(prop)` | the property's value, or an empty string when it is missing |
/// | `$(prop, n)` | the value clipped to `n` characters |
/// | `.(prop, n)` | the value clipped to `n` characters, ending in `...` when anything was cut (the whole stays within `n`; with `n` ≤ 3 it is clipped without `...`) |
/// | `%(prop)` | the value URI-encoded: UTF-8, every byte but `A–Z a–z 0–9 - . _ ~` as `%XX` |
/// | `#(prop)` | in JSON, when it is the whole string value and the value is a JSON number, the bare number (`"badge": "#(count)"` gives `"badge": 7`); otherwise like `$(prop)` |
/// | `{expr + 'text' + "text" + …}` | concatenation, which exists only inside braces |
///
/// Property names match `^[A-Za-z0-9_]+$`, have at most 120 characters, and are compared
/// without regard to case. Characters are grapheme clusters, so clipping never cuts one in
/// two. Whitespace may surround a name, a length, and the operands of `+`.
///
/// How a value is read:
/// - Text around expressions is kept: `"Hi $(name)!"` renders as `Hi Ann!`.
/// - `$(`, `%(`, `.(` and `#(` always start an expression, and a malformed one is refused
///   when the template is created. A `$`, `%`, `.` or `#` not followed by `(` is text.
/// - `{` starts a concatenation block only when a whole block parses from it: operands
///   (expressions or quoted literals) joined by `+` and closed by `}`. Any other `{` is
///   text, so a string holding JSON such as `{"id":"$(id)"}` keeps its braces.
/// - A literal is `'…'` or `"…"`; its quote, doubled, stands for itself (`'it''s'`). Pick
///   the quote that does not clash with the document: in a JSON string `'…'` (or `\"…\"`),
///   in an XML attribute the other quote than the attribute's (or `&quot;`/`&apos;`).
///   Outside braces quotes are text.
/// - To write `$(` itself as text, put it in a literal: `{'$(' + 'not a property)'}`.
/// - Expressions are read after the document's own escapes are undone: JSON `\"` and
///   `\u0024`, XML `&apos;` and `&#36;` count as the characters they stand for.
///
/// Rendering escapes every value for the place it lands in — JSON string escaping, XML
/// escaping in text and attributes — so the result is always a valid document, whatever
/// the properties hold. Characters XML cannot carry at all become U+FFFD.
public struct NotificationTemplate: Sendable, Hashable {
    public enum Format: Sendable, Hashable { case json, xml }

    public let body: String
    public let format: Format
    private let program: Program

    /// Parses and validates; throws HeraldError.badRequest with a precise message (what, where) for a body that is
    /// neither JSON nor XML, an expression syntax error, a property name not matching ^[A-Za-z0-9_]+$ (<=120 chars).
    ///
    /// A body whose first non-whitespace character is `{` or `[` is JSON, `<` is XML. Leading
    /// whitespace is left out of rendered documents.
    public init(body: String) throws(HeraldError) {
        let first = body.utf8.first { !($0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D) }
        switch first {
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            var compiler = JSONCompiler(body: body)
            program = try compiler.compile()
            format = .json
        case UInt8(ascii: "<"):
            var compiler = XMLCompiler(body: body)
            program = try compiler.compile()
            format = .xml
        case nil:
            throw HeraldError.badRequest("The template body is empty; expected a JSON or XML document.")
        default:
            throw HeraldError.badRequest(
                "The template body is neither a JSON object or array nor an XML document: it must start with '{' or '[' (JSON) or '<' (XML)."
            )
        }
        self.body = body
    }

    /// Renders with `properties` (case-insensitive names). Result is valid JSON or XML.
    ///
    /// When `properties` holds several keys that differ only in case, the first in code-point
    /// order is used.
    public func render(_ properties: [String: String]) -> String {
        program.render(properties)
    }

    /// Appends the rendering's UTF-8 to `output`, with the value of each property given by
    /// `value` (`nil` when it is missing), which is called with the property's number: its
    /// index in ``orderedPropertyNames``. The result is the same document as
    /// ``render(_:)``'s, without building a dictionary or a string.
    public func render(into output: inout [UInt8], value: (_ property: Int) -> String?) {
        program.render(into: &output, value: value)
    }

    /// The property names the template uses (lowercased), e.g. for docs/validation.
    public var propertyNames: Set<String> {
        Set(program.propertyNames)
    }

    /// The property names the template uses (lowercased), numbered as
    /// ``render(into:value:)`` asks for them.
    public var orderedPropertyNames: [String] {
        program.propertyNames
    }

    /// Renders a header value or an APNs expiry that may hold expressions (no JSON/XML context: plain text).
    ///
    /// The same expressions as in a body; `#(prop)` is like `$(prop)`. Control characters
    /// other than tab in a property's value become spaces, so a value cannot add a line to
    /// a header block. Text without `(` or `{` is returned as it is, without parsing.
    public static func renderText(_ text: String, properties: [String: String]) throws(HeraldError) -> String {
        try Text(text).render(properties)
    }

    // Equality and hashing follow the body: the format and the compiled form derive from it.

    public static func == (lhs: NotificationTemplate, rhs: NotificationTemplate) -> Bool {
        lhs.body == rhs.body
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(body)
    }
}

extension NotificationTemplate {
    /// `line 3, column 14` for a byte offset into `bytes` (columns count characters).
    static func location(ofByte offset: Int, in bytes: [UInt8]) -> String {
        var line = 1
        var column = 1
        for byte in bytes[..<min(offset, bytes.count)] {
            if byte == UInt8(ascii: "\n") {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80 {
                column += 1
            }
        }
        return "line \(line), column \(column)"
    }

    /// `text`, cut to 60 characters for a message.
    static func shortened(_ text: String) -> String {
        text.count > 60 ? text.prefix(60) + "…" : text
    }
}

extension NotificationTemplate {
    /// Checks that a header value or an APNs expiry renders: that every expression in it
    /// parses, as ``renderText(_:properties:)`` will need at send time.
    ///
    /// - Throws: `badRequest` naming the expression and what is wrong with it.
    public static func validateText(_ text: String) throws(HeraldError) {
        do {
            _ = try parseValue(text)
        } catch {
            throw HeraldError.badRequest(error.message("at character \(error.characterOffset + 1) of \"\(shortened(text))\""))
        }
    }
}

extension RegistrationTemplate {
    /// Checks that the template renders, so that a template that cannot is refused when it is
    /// registered rather than failing every send: the body is a JSON or XML document whose
    /// expressions parse, and so are those of the header values and the expiry.
    ///
    /// - Throws: `badRequest` whose message starts with the part at fault, in the hub API's
    ///   names (`BodyTemplate: …`, `ApnsHeaders/apns-collapse-id: …`, `Expiry: …`).
    public func validate() throws(HeraldError) {
        do {
            _ = try NotificationTemplate(body: body)
        } catch {
            throw .badRequest("BodyTemplate: \(error.message)")
        }
        for header in headers {
            do {
                try NotificationTemplate.validateText(header.value)
            } catch {
                throw .badRequest("the header \(header.name): \(error.message)")
            }
        }
        if let expiry {
            do {
                try NotificationTemplate.validateText(expiry)
            } catch {
                throw .badRequest("Expiry: \(error.message)")
            }
        }
    }
}
