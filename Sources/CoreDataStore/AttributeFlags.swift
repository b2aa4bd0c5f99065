/// The bits of an attribute's `NSFlagsKey`, as Apple's model caches (`Z_MODELCACHE`) archive them.
///
/// Apple archives `allowsExternalBinaryDataStorage` and `preservesValueInHistoryOnDeletion` here,
/// not under keys of their own. What each bit means, and how sure we are:
/// - `0x04` external binary storage: measured. In every real cache we hold, exactly the Binary
///   attributes whose columns hold `0x01`/`0x02` markers have it (Photos' `projectData`, the iOS 17
///   MeWe store's `temporaryDataToUpload`).
/// - `0x10` preserved on deletion: measured. knowledgeC and Screen Time set it on exactly the
///   attributes whose values their history deletes keep in `ZTOMBSTONE<n>` columns.
/// - `0x20` file-backed future: inferred (Core Data's encoder sets it for `isFileBackedFuture`,
///   as read in public decompilations); no store we hold sets it.
/// Other bits are kept as they came and shown as unknown, never guessed at.
public struct AttributeFlags: OptionSet, Sendable, Hashable {
    public let rawValue: Int64
    public init(rawValue: Int64) { self.rawValue = rawValue }

    public static let externalBinaryDataStorage = AttributeFlags(rawValue: 0x04)
    public static let preservesValueOnDeletion = AttributeFlags(rawValue: 0x10)
    public static let fileBackedFuture = AttributeFlags(rawValue: 0x20)

    /// The bits this reader gives a name to.
    public static let named: AttributeFlags = [.externalBinaryDataStorage, .preservesValueOnDeletion, .fileBackedFuture]

    /// Bits set that have no name here.
    public var unknown: AttributeFlags { subtracting(Self.named) }
}
