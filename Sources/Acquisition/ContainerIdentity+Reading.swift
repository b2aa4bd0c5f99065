import Foundation
import StoreFormats

extension ContainerIdentity {
    /// The marker file iOS keeps at the root of every data container.
    static let metadataPlistName = ".com.apple.mobile_container_manager.metadata.plist"

    /// Reads a container's identity from its metadata plist (`MCMMetadataIdentifier`), if any.
    static func fromMetadataPlist(_ url: URL, root: String) -> ContainerIdentity? {
        guard let values = PlistStrings.read(url) else { return nil }
        let identifier = values["MCMMetadataIdentifier"]
        return ContainerIdentity(kind: kind(for: identifier), identifier: identifier, source: metadataPlistName, root: root)
    }

    /// Reads an `.xcappdata` bundle's `AppDataInfo.plist`. Xcode has used several key names for the
    /// app's identifier; the first present wins.
    static func fromAppDataInfo(_ url: URL, root: String) -> ContainerIdentity {
        let values = PlistStrings.read(url) ?? [:]
        let identifier = ["ApplicationIdentifier", "CFBundleIdentifier", "BundleIdentifier", "bundleIdentifier"]
            .lazy.compactMap { values[$0] }.first
        return ContainerIdentity(kind: .appData, identifier: identifier, source: "AppDataInfo.plist", root: root)
    }

    static func kind(for identifier: String?) -> Kind {
        guard let identifier else { return .unknown }
        return identifier.hasPrefix("group.") ? .appGroup : .appData
    }
}

/// The top-level string values of a small plist file (binary or XML), for identity keys.
enum PlistStrings {
    static let maxBytes = 1 << 20

    static func read(_ url: URL) -> [String: String]? {
        EvidenceReads.pass(url.path)
        guard let data = try? SmallFile.contents(of: url, limit: maxBytes) else { return nil }
        if BinaryPlist.isBinaryPlist(data), let value = try? BinaryPlist.decode(data), let dict = value.dictionaryValue {
            return dict.compactMapValues(\.stringValue)
        }
        guard let any = try? PropertyListSerialization.propertyList(from: data, options: [], format: nil),
              let dict = any as? [String: Any] else { return nil }
        return dict.compactMapValues { $0 as? String }
    }
}
