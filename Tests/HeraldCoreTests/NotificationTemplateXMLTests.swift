import Foundation
import HeraldCore
import HeraldTestSupport
import Testing

#if canImport(FoundationXML)
import FoundationXML
#endif

/// Expressions in XML bodies (WNS toasts, tiles and badges).
@Suite("Notification templates: XML")
struct NotificationTemplateXMLTests {
    static let toast = """
        <toast launch="app?id=%(id)">
          <visual>
            <binding template="ToastGeneric">
              <text id="1">$(title)</text>
              <text id="2" hint-maxLines='2'>{'From ' + $(sender) + ": " + .(message, 24)}</text>
              <image src="https://img.test/$(image)" alt="{&quot;Photo of &quot; + $(sender)}"/>
            </binding>
          </visual>
          <audio src="ms-winsoundevent:Notification.Default"/>
        </toast>
        """

    @Test func wnsToastWithAttributes() throws {
        let template = try NotificationTemplate(body: Self.toast)
        #expect(template.format == .xml)
        #expect(template.propertyNames == ["id", "title", "sender", "message", "image"])
        let rendered = template.render([
            "id": "a b", "title": "Hello", "sender": "Ann", "message": "This message is far too long to show", "image": "p.png",
        ])
        let expected = """
            <toast launch="app?id=a%20b">
              <visual>
                <binding template="ToastGeneric">
                  <text id="1">Hello</text>
                  <text id="2" hint-maxLines='2'>From Ann: This message is far t...</text>
                  <image src="https://img.test/p.png" alt="Photo of Ann"/>
                </binding>
              </visual>
              <audio src="ms-winsoundevent:Notification.Default"/>
            </toast>
            """
        #expect(rendered == expected)
        let document = try XMLDocumentSummary(rendered)
        #expect(document.texts == ["Hello", "From Ann: This message is far t..."])
        #expect(document.attributes["alt"] == "Photo of Ann")
    }

    @Test func tileAndBadge() throws {
        let badge = try NotificationTemplate(body: ##"<badge value="#(count)"/>"##)
        #expect(badge.render(["COUNT": "5"]) == #"<badge value="5"/>"#)
        let tile = try NotificationTemplate(body: #"<tile><visual><binding template="TileSmall"><text>$(t,5)</text></binding></visual></tile>"#)
        #expect(tile.render(["t": "Seattle, WA"]) == #"<tile><visual><binding template="TileSmall"><text>Seatt</text></binding></visual></tile>"#)
    }

    @Test func missingPropertiesRenderEmpty() throws {
        let template = try NotificationTemplate(body: #"<a x="[$(a)]">[$(b)|.(c,4)|%(d)|#(e)]</a>"#)
        #expect(template.render([:]) == #"<a x="[]">[|||]</a>"#)
    }

    @Test func valuesAreEscapedInTextAndAttributes() throws {
        let hostile = "<b>\"Tom\" & 'Jerry'</b> ]]> \t\n\r end"
        let template = try NotificationTemplate(body: #"<a q="$(v)" s='$(v)'>$(v)<b>{'&lt;' + $(v)}</b></a>"#)
        let rendered = template.render(["v": hostile])
        #expect(
            rendered
                == #"<a q="&lt;b&gt;&quot;Tom&quot; &amp; &apos;Jerry&apos;&lt;/b&gt; ]]&gt; &#9;&#10;&#13; end" s='&lt;b&gt;&quot;Tom&quot; &amp; &apos;Jerry&apos;&lt;/b&gt; ]]&gt; &#9;&#10;&#13; end'>&lt;b&gt;&quot;Tom&quot; &amp; &apos;Jerry&apos;&lt;/b&gt; ]]&gt; "#
                + "\t\n" + #"&#13; end<b>&lt;&lt;b&gt;&quot;Tom&quot; &amp; &apos;Jerry&apos;&lt;/b&gt; ]]&gt; "# + "\t\n"
                + "&#13; end</b></a>"
        )
        // A parser reads back exactly the values.
        let document = try XMLDocumentSummary(rendered)
        #expect(document.attributes["q"] == hostile)
        #expect(document.attributes["s"] == hostile)
        #expect(document.texts == [hostile, "<" + hostile])
    }

    @Test func charactersXMLCannotCarryBecomeReplacementCharacters() throws {
        let template = try NotificationTemplate(body: #"<a x="$(v)">$(v)</a>"#)
        let rendered = template.render(["v": "a\u{0}b\u{1B}c\u{FFFE}d"])
        #expect(rendered == "<a x=\"a\u{FFFD}b\u{FFFD}c\u{FFFD}d\">a\u{FFFD}b\u{FFFD}c\u{FFFD}d</a>")
        _ = try XMLDocumentSummary(rendered)
    }

    @Test func literalsWithBothQuoteKinds() throws {
        // In a double-quoted attribute: single quotes, or &quot;; in text either kind.
        let template = try NotificationTemplate(
            body: #"<a x="{'It''s ' + $(n)}" y="{&quot;say &quot; + $(n)}" z='{"q" + $(n)}'>{"It's " + $(n) + '!'}</a>"#
        )
        let rendered = template.render(["n": "Ann"])
        #expect(rendered == #"<a x="It&apos;s Ann" y="say Ann" z='qAnn'>It&apos;s Ann!</a>"#)
        let document = try XMLDocumentSummary(rendered)
        #expect(document.attributes == ["x": "It's Ann", "y": "say Ann", "z": "qAnn"])
        #expect(document.texts == ["It's Ann!"])
    }

    @Test func expressionsAreReadAfterReferences() throws {
        // &#36; is "$"; &amp; in the literal text around it is kept as a character.
        let template = try NotificationTemplate(body: "<a>&#36;(v) &amp; $(v)</a>")
        #expect(template.render(["v": "1"]) == "<a>1 &amp; 1</a>")
    }

    @Test func valuesWithoutExpressionsAreCopiedAsWritten() throws {
        let body = """
            <?xml version="1.0" encoding="utf-8"?>
            <!-- $(not) evaluated -->
            <a  x = 'A&amp;B&#10;' >text &lt; $5 (x)<?pi $(nope)?><![CDATA[<raw> $ (x)]]><b/></a>
            """
        let template = try NotificationTemplate(body: body)
        #expect(template.propertyNames.isEmpty)
        #expect(template.render(["not": "x"]) == body)
    }

    @Test func cdataSectionsHoldExpressions() throws {
        let template = try NotificationTemplate(body: "<a><![CDATA[<b>$(v)</b>]]></a>")
        let rendered = template.render(["v": "]]> & <"])
        #expect(rendered == "<a>&lt;b&gt;]]&gt; &amp; &lt;&lt;/b&gt;</a>")
        #expect(try XMLDocumentSummary(rendered).texts == ["<b>]]> & <</b>"])
    }

    @Test func leadingWhitespaceBeforeTheDeclarationIsLeftOut() throws {
        let template = try NotificationTemplate(body: "\n  <?xml version=\"1.0\"?><a>$(v)</a>\n")
        let rendered = template.render(["v": "1"])
        #expect(rendered == "<?xml version=\"1.0\"?><a>1</a>\n")
        _ = try XMLDocumentSummary(rendered)
    }

    @Test(arguments: [
        ("<a><b></a>", "line 1, column 7: the end tag </a> does not match the start tag <b>."),
        ("<a>\n<b>", "line 2, column 4: the element <b> is not closed."),
        ("<a></a></b>", "line 1, column 8: the end tag </b> has no matching start tag."),
        ("<a/><b/>", "line 1, column 5: a second root element <b>; a template has exactly one root element."),
        ("<a/>x", "line 1, column 5: text is not allowed outside the root element."),
        (#"<a x="1" x="2"/>"#, "line 1, column 10: the attribute 'x' appears twice in the tag <a>."),
        (#"<a x=1/>"#, "line 1, column 6: the value of the attribute 'x' must be in quotes, found '1'."),
        (#"<a x="1/>"#, "line 1, column 6: the value of the attribute 'x' is not closed."),
        (#"<a x="<"/>"#, "line 1, column 7: '<' is not allowed in an attribute value; write &lt; (attribute 'x')."),
        (#"<a x="1"y="2"/>"#, "line 1, column 9: attributes of <a> must be separated by whitespace."),
        (#"<binding $(property)>x</binding>"#, "line 1, column 10: expressions are allowed only in attribute values and text, not in the tag <binding>."),
        ("<a>&foo;</a>", "line 1, column 4: the entity &foo; is not defined (only &amp; &lt; &gt; &quot; &apos; and character references such as &#233; are)."),
        ("<a>&#1;</a>", "line 1, column 4: &#1; is not a reference to a character XML allows."),
        ("<a>AT&T</a>", "line 1, column 6: '&' must start a reference such as &amp; (write &amp; for '&')."),
        ("<a>]]></a>", "line 1, column 4: ']]>' is not allowed in text; write ]]&gt;."),
        ("<a><!-- a -- b --></a>", "line 1, column 11: '--' is not allowed inside a comment."),
        ("<!DOCTYPE a [<!ENTITY x \"y\">]><a>&x;</a>", "line 1, column 1: document type declarations (<!DOCTYPE …>) are not allowed in templates."),
        ("<a/><?xml version=\"1.0\"?>", "line 1, column 5: the XML declaration must come first in the body."),
        ("<a>\u{1}</a>", "line 1, column 4: the character U+0001 is not allowed in XML."),
        ("< a/>", "line 1, column 2: expected an element name after '<', found whitespace."),
        ("<a", "line 1, column 1: the start tag <a> is not closed with '>'."),
        ("<!-- only a comment -->", "line 1, column 24: it has no root element."),
    ])
    func malformedXMLIsRefusedWithPlace(body: String, message: String) {
        expectError(HeraldError.badRequest("The XML template body is malformed at " + message)) {
            try NotificationTemplate(body: body)
        }
    }

    @Test func deeplyNestedXMLIsRefused() throws {
        let allowed = String(repeating: "<a>", count: 64) + "$(v)" + String(repeating: "</a>", count: 64)
        #expect(try NotificationTemplate(body: allowed).render(["v": "1"]).contains("<a>1</a>"))
        let deep = String(repeating: "<a>", count: 65) + String(repeating: "</a>", count: 65)
        expectError(HeraldError.badRequest("The XML template body is malformed at line 1, column 193: elements are nested more than 64 levels deep.")) {
            try NotificationTemplate(body: deep)
        }
    }

    @Test func expressionErrorsInXMLSayWhere() {
        expectError(
            HeraldError.badRequest(
                "The template has an invalid expression \".(title)\" in the XML text at line 2, column 16: '.(' needs a length, as in .(title, 20)."
            )
        ) {
            try NotificationTemplate(body: "<toast>\n  <text id=\"1\">.(title)</text></toast>")
        }
        expectError(
            HeraldError.badRequest(
                "The template has an invalid expression \"$(a.b)\" in the XML attribute value at line 1, column 9: a property name may contain only letters A–Z and a–z, digits and underscores (found '.')."
            )
        ) {
            try NotificationTemplate(body: #"<a src="x$(a.b)"/>"#)
        }
    }
}

/// What a parser reads from a document: the text of each element that has any, and the
/// attributes of all elements (by name; later ones win). Throws when it is not well-formed.
struct XMLDocumentSummary {
    var texts: [String] = []
    var attributes: [String: String] = [:]

    init(_ document: String) throws {
        let collector = Collector()
        let parser = XMLParser(data: Data(document.utf8))
        parser.delegate = collector
        guard parser.parse() else {
            throw HeraldError.badRequest(
                "not well-formed at line \(parser.lineNumber), column \(parser.columnNumber): \(document)"
            )
        }
        texts = collector.texts.filter { !$0.allSatisfy(\.isWhitespace) }
        attributes = collector.attributes
    }

    /// Receives one parse's events on one thread.
    private final class Collector: NSObject, XMLParserDelegate {
        var texts: [String] = []
        var attributes: [String: String] = [:]
        private var current: String?

        func parser(
            _ parser: XMLParser,
            didStartElement elementName: String,
            namespaceURI: String?,
            qualifiedName qName: String?,
            attributes attributeDict: [String: String] = [:]
        ) {
            if let current { texts.append(current) }
            current = ""
            attributes.merge(attributeDict) { _, new in new }
        }

        func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName qName: String?) {
            if let current { texts.append(current) }
            current = nil
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            current = (current ?? "") + string
        }

        func parser(_ parser: XMLParser, foundCDATA CDATABlock: Data) {
            current = (current ?? "") + String(decoding: CDATABlock, as: UTF8.self)
        }
    }
}
