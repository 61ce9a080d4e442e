import protobuf from 'protobufjs/minimal.js';

/** A message type's functions, as protobufjs's Type.setup generates them (with `this` the type). */
export interface Codecs {
  encode(message: object, writer?: protobuf.Writer): protobuf.Writer;
  decode(reader: protobuf.Reader | Uint8Array, length?: number): object;
  fromObject(object: Record<string, unknown>): object;
  toObject(message: object, options?: protobuf.IConversionOptions): Record<string, unknown>;
}

/** What the build generated for one message type (scripts/gen-cri-types.mjs). */
export interface PrebuiltType {
  /** Type.generateConstructor's constructor. */
  ctor: () => new (properties?: object) => object;
  /** The codecs, given the scope Type.setup gives them: Writer, Reader, the types of the fields (in field order) and util. */
  codecs: (Writer: unknown, Reader: unknown, types: unknown[], util: unknown) => Codecs;
}

/** A message type without protobufjs's reflection: its constructor and codecs, made when first used. */
export interface StaticType extends Codecs {
  ctor: new (properties?: object) => object;
  /** Whether its functions were made (tests: a type is set up when used, not when the module loads). */
  readonly setUp: boolean;
  /** The generated source it was made from (tests). */
  readonly prebuilt: PrebuiltType;
}

/** An enum type: its values by name, and by number through the prototype, as protobufjs's Enum. */
export interface StaticEnum {
  values: Record<string, number | string>;
}

export type StaticTypes = Record<string, StaticType | StaticEnum>;

const FUNCTIONS = ['ctor', 'encode', 'decode', 'fromObject', 'toObject'] as const;

/**
 * A message type of the generated module. Its functions are made on first use of any of them, with
 * the types of its fields looked up by name in `all` (which then set themselves up when the generated
 * code first calls them), as protobufjs's Type does lazily: a process compiles and links only the
 * types it sends or reads, and builds no Root from a descriptor (10 to 20 ms of a command's start).
 */
export function staticMessage(all: StaticTypes, fieldTypes: (string | null)[], ctor: PrebuiltType['ctor'], codecs: PrebuiltType['codecs']): StaticType {
  const type = { prebuilt: { ctor, codecs } } as StaticType & { setUp: boolean };
  let setUp = false;
  const setup = () => {
    if (setUp) return;
    setUp = true;
    const types = fieldTypes.map((name) => (name === null ? null : all[name]));
    const made = { ctor: ctor(), ...codecs(protobuf.Writer, protobuf.Reader, types, protobuf.util) };
    for (const key of FUNCTIONS) Object.defineProperty(type, key, { value: made[key], writable: true, enumerable: true, configurable: true });
  };
  for (const key of FUNCTIONS) {
    Object.defineProperty(type, key, {
      get() {
        setup();
        return type[key];
      },
      configurable: true,
      enumerable: true,
    });
  }
  Object.defineProperty(type, 'setUp', { get: () => setUp });
  return type;
}

/** An enum type of the generated module, from its values by name. */
export function staticEnum(values: Record<string, number>): StaticEnum {
  const byNumber = Object.fromEntries(Object.entries(values).map(([name, n]) => [n, name]));
  return { values: Object.assign(Object.create(byNumber) as Record<string, number | string>, values) };
}
