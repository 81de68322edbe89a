/// Writes XML 1.0 with escaping done in one place.
///
/// Element and attribute names come from code and are not checked; text and attribute
/// values are escaped (`& < > " '`, and in attributes also tab, newline and carriage
/// return, which parsers would otherwise normalise away). Characters XML 1.0 cannot carry
/// at all — control characters other than tab, newline and carriage return, and the
/// noncharacters U+FFFE and U+FFFF — make the writer throw ``InvalidCharacter``.
///
/// ```swift
/// var xml = XMLWriter()
/// try xml.start("text", attributes: [("id", "1")])
/// try xml.text("Tom & Jerry")
/// xml.end()
/// xml.output  // <text id="1">Tom &amp; Jerry</text>
/// ```
package struct XMLWriter: Sendable {
    /// A character that XML 1.0 cannot represent, not even as a character reference.
    package struct InvalidCharacter: Error, Hashable, Sendable {
        package var scalar: Unicode.Scalar
        package init(scalar: Unicode.Scalar) { self.scalar = scalar }
        /// `U+0001`.
        package var name: String {
            let digits = String(scalar.value, radix: 16, uppercase: true)
            return "U+" + String(repeating: "0", count: max(0, 4 - digits.count)) + digits
        }
    }

    package private(set) var output = ""
    private var open: [String] = []

    package init() {}

    /// Opens `<name attr="value">`.
    package mutating func start(
        _ name: String,
        attributes: [(name: String, value: String)] = []
    ) throws(InvalidCharacter) {
        output += "<" + name
        try writeAttributes(attributes)
        output += ">"
        open.append(name)
    }

    /// `<name attr="value"/>`: an element with no content, closed at once.
    package mutating func empty(
        _ name: String,
        attributes: [(name: String, value: String)] = []
    ) throws(InvalidCharacter) {
        output += "<" + name
        try writeAttributes(attributes)
        output += "/>"
    }

    /// Character data in CDATA sections, so that markup in it (a template body) reads as written.
    ///
    /// A `]]>` inside is split over two sections, and a carriage return, which a parser would
    /// turn into a line feed, goes between sections as `&#13;`: a parser reads back exactly
    /// `text`. Empty text writes nothing.
    package mutating func cdata(_ text: String) throws(InvalidCharacter) {
        var inSection = false
        var trailingBrackets = 0
        for scalar in text.unicodeScalars {
            if scalar == "\r" {
                if inSection { output += "]]>" }
                inSection = false
                trailingBrackets = 0
                output += "&#13;"
                continue
            }
            if scalar.value < 0x20, scalar != "\t", scalar != "\n" { throw InvalidCharacter(scalar: scalar) }
            if scalar.value == 0xFFFE || scalar.value == 0xFFFF { throw InvalidCharacter(scalar: scalar) }
            if !inSection {
                output += "<![CDATA["
                inSection = true
            }
            if scalar == ">", trailingBrackets >= 2 {
                // `]]` is already out; end the section before `>` and carry on in a new one.
                output += "]]><![CDATA[>"
                trailingBrackets = 0
                continue
            }
            trailingBrackets = scalar == "]" ? trailingBrackets + 1 : 0
            output.unicodeScalars.append(scalar)
        }
        if inSection { output += "]]>" }
    }

    private mutating func writeAttributes(_ attributes: [(name: String, value: String)]) throws(InvalidCharacter) {
        for attribute in attributes {
            output += " " + attribute.name + "=\""
            try Self.escape(attribute.value, inAttribute: true, into: &output)
            output += "\""
        }
    }

    /// Closes the innermost open element.
    package mutating func end() {
        guard let name = open.popLast() else { preconditionFailure("XMLWriter.end() without an open element") }
        output += "</" + name + ">"
    }

    /// Escaped character data.
    package mutating func text(_ text: String) throws(InvalidCharacter) {
        try Self.escape(text, inAttribute: false, into: &output)
    }

    /// `<name>text</name>`.
    package mutating func element(
        _ name: String,
        attributes: [(name: String, value: String)] = [],
        text: String
    ) throws(InvalidCharacter) {
        try start(name, attributes: attributes)
        try self.text(text)
        end()
    }

    private static func escape(_ text: String, inAttribute: Bool, into output: inout String) throws(InvalidCharacter) {
        if let invalid = escape(text, inAttribute: inAttribute, replacingInvalidWith: "\u{FFFD}", into: &output) {
            throw InvalidCharacter(scalar: invalid)
        }
    }

    /// Appends `text` escaped as XML character data or an attribute value: `& < > " '` as
    /// entities; carriage return, and in attributes tab and newline, as character references
    /// (a parser would normalise them away). A character XML 1.0 cannot carry is appended as
    /// `replacement`; the first such character is returned (`nil` when there was none).
    @discardableResult
    package static func escape(
        _ text: String,
        inAttribute: Bool,
        replacingInvalidWith replacement: Unicode.Scalar,
        into output: inout String
    ) -> Unicode.Scalar? {
        var invalid: Unicode.Scalar?
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": output += "&amp;"
            case "<": output += "&lt;"
            case ">": output += "&gt;"
            case "\"": output += "&quot;"
            case "'": output += "&apos;"
            // A parser turns CR and CRLF into LF, and in attributes tab and LF into spaces.
            case "\r": output += "&#13;"
            case "\t" where inAttribute: output += "&#9;"
            case "\n" where inAttribute: output += "&#10;"
            case "\t", "\n": output.unicodeScalars.append(scalar)
            default:
                if scalar.value < 0x20 || scalar.value == 0xFFFE || scalar.value == 0xFFFF {
                    if invalid == nil { invalid = scalar }
                    output.unicodeScalars.append(replacement)
                } else {
                    output.unicodeScalars.append(scalar)
                }
            }
        }
        return invalid
    }
}
