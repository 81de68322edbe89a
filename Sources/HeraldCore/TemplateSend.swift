import Foundation

/// What a template send carries: the properties, and optionally the one template to use.
public struct TemplateSend: Sendable, Hashable, Codable {
    /// Property values by name; names match case-insensitively.
    public var properties: [String: String]
    /// Only template registrations whose template has this name are reached; `nil` for all.
    public var templateName: String?

    public init(properties: [String: String], templateName: String? = nil) {
        self.properties = properties
        self.templateName = templateName
    }
}
