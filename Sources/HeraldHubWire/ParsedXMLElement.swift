import Foundation

#if canImport(FoundationXML)
import FoundationXML
import HeraldCore
#endif

/// One element of a parsed hub API document, matched by local name.
///
/// Names and attribute names lose their namespace prefix (`i:nil` is `nil`, `a:etag` is
/// `etag`), and namespace declarations are dropped: the hub API's clients differ in the
/// prefixes they use, never in the local names.
struct ParsedXMLElement: Sendable {
    /// The local name: `AppleRegistrationDescription` for `<a:AppleRegistrationDescription>`.
    var name: String
    /// Attributes by local name.
    var attributes: [String: String]
    var children: [ParsedXMLElement]
    /// The character data directly inside this element (text and CDATA, in order).
    var text: String

    init(name: String, attributes: [String: String] = [:], children: [ParsedXMLElement] = [], text: String = "") {
        self.name = name
        self.attributes = attributes
        self.children = children
        self.text = text
    }

    /// The first child named `name`.
    func child(_ name: String) -> ParsedXMLElement? { children.first { $0.name == name } }

    /// Every child named `name`, in document order.
    func children(_ name: String) -> [ParsedXMLElement] { children.filter { $0.name == name } }

    /// Marked `i:nil="true"`: present but explicitly without a value.
    var isNil: Bool { attributes["nil"]?.trimmingSpaces().lowercased() == "true" }

    /// The text with surrounding white space removed.
    var trimmedText: String { text.trimmingWhitespace() }

    /// The trimmed text of the child `name`; `nil` if there is no such child or it is `i:nil`.
    func value(_ name: String) -> String? {
        guard let element = child(name), !element.isNil else { return nil }
        return element.trimmedText
    }

    /// Like ``value(_:)``, and `nil` for an empty value too.
    func nonEmptyValue(_ name: String) -> String? {
        guard let value = value(name), !value.isEmpty else { return nil }
        return value
    }

    /// The local part of a qualified name: `i:type` → `type`.
    static func localName(_ qualified: String) -> String {
        guard let colon = qualified.lastIndex(of: ":") else { return qualified }
        return String(qualified[qualified.index(after: colon)...])
    }
}

extension ParsedXMLElement {
    /// The deepest nesting accepted; the hub API's documents are five levels deep.
    static let maxDepth = 32

    /// Parses `data` into its root element.
    ///
    /// A document type declaration is refused (no hub API document has one, and it is the
    /// door to entity expansion); so is a document nested deeper than ``maxDepth``. Errors
    /// are `400` ``HeraldError``s that name `document` and where the XML is broken, never
    /// its content.
    static func parse(_ data: Data, document: String) throws(HeraldError) -> ParsedXMLElement {
        if hasDocumentTypeDeclaration(data) {
            throw .badRequest("the \(document) must not contain a document type declaration (<!DOCTYPE …>)")
        }
        let builder = TreeBuilder()
        let parser = XMLParser(data: data)
        parser.shouldProcessNamespaces = false
        parser.shouldReportNamespacePrefixes = false
        parser.shouldResolveExternalEntities = false
        parser.delegate = builder
        let ok = parser.parse()
        if builder.tooDeep {
            throw .badRequest("the \(document) is nested more than \(maxDepth) elements deep")
        }
        guard ok, let root = builder.root else {
            if data.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
                throw .badRequest("the \(document) is empty; an XML document is expected")
            }
            throw .badRequest(
                "the \(document) is not well-formed XML (line \(parser.lineNumber), column \(parser.columnNumber))"
            )
        }
        return root
    }

    /// Whether a `<!DOCTYPE` comes before the root element (after the XML declaration,
    /// processing instructions, comments and white space).
    static func hasDocumentTypeDeclaration(_ data: Data) -> Bool {
        let bytes = [UInt8](data.prefix(64 * 1024))
        var i = 0
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { i = 3 }
        func starts(_ literal: String, at index: Int) -> Bool {
            var j = index
            for byte in literal.utf8 {
                guard j < bytes.count, bytes[j] == byte else { return false }
                j += 1
            }
            return true
        }
        func skip(past terminator: String, from index: Int) -> Int? {
            var j = index
            while j < bytes.count {
                if starts(terminator, at: j) { return j + terminator.utf8.count }
                j += 1
            }
            return nil
        }
        while i < bytes.count {
            switch bytes[i] {
            case 0x20, 0x09, 0x0A, 0x0D:
                i += 1
            case UInt8(ascii: "<"):
                if starts("<?", at: i) {
                    guard let next = skip(past: "?>", from: i + 2) else { return false }
                    i = next
                } else if starts("<!--", at: i) {
                    guard let next = skip(past: "-->", from: i + 4) else { return false }
                    i = next
                } else {
                    return starts("<!DOCTYPE", at: i) || starts("<!doctype", at: i)
                }
            default:
                return false
            }
        }
        return false
    }
}

/// Builds the element tree from the parser's events. Used by one parse on one thread only.
private final class TreeBuilder: NSObject, XMLParserDelegate {
    private var stack: [ParsedXMLElement] = []
    private(set) var root: ParsedXMLElement?
    private(set) var tooDeep = false

    func parser(
        _ parser: XMLParser,
        didStartElement elementName: String,
        namespaceURI: String?,
        qualifiedName qName: String?,
        attributes attributeDict: [String: String] = [:]
    ) {
        guard stack.count < ParsedXMLElement.maxDepth else {
            tooDeep = true
            parser.abortParsing()
            return
        }
        var attributes: [String: String] = [:]
        for (name, value) in attributeDict where name != "xmlns" && !name.hasPrefix("xmlns:") {
            attributes[ParsedXMLElement.localName(name)] = value
        }
        stack.append(ParsedXMLElement(name: ParsedXMLElement.localName(elementName), attributes: attributes))
    }

    func parser(
        _ parser: XMLParser,
        didEndElement elementName: String,
        namespaceURI: String?,
        qualifiedName qName: String?
    ) {
        guard let element = stack.popLast() else { return }
        if stack.isEmpty {
            root = element
        } else {
            stack[stack.count - 1].children.append(element)
        }
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        guard !stack.isEmpty else { return }
        stack[stack.count - 1].text += string
    }

    func parser(_ parser: XMLParser, foundCDATA CDATABlock: Data) {
        guard !stack.isEmpty else { return }
        stack[stack.count - 1].text += String(decoding: CDATABlock, as: UTF8.self)
    }
}
