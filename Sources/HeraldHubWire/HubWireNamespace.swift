import HeraldCore

/// The XML namespaces of the hub API's documents.
package enum HubWireNamespace {
    /// Atom: registration entries and feeds.
    package static let atom = "http://www.w3.org/2005/Atom"
    /// Registration descriptions, notification details and outcomes (plain `http`, as the SDKs send it).
    package static let connect = "http://schemas.microsoft.com/netservices/2010/10/servicebus/connect"
    /// XML Schema instance: `i:nil`, `i:type`.
    package static let schemaInstance = "http://www.w3.org/2001/XMLSchema-instance"
    /// The namespace of the `a:etag` attribute on Atom entries.
    package static let dataServicesMetadata = "http://schemas.microsoft.com/ado/2007/08/dataservices/metadata"

    /// `xmlns` and `xmlns:i` as the service writes them on a description's root element.
    static let descriptionAttributes: [(name: String, value: String)] = [
        ("xmlns", connect), ("xmlns:i", schemaInstance),
    ]
}
