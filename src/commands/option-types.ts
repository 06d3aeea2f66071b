// The shape of a command's option table (src/commands/options.ts), and the type of the arguments each
// table gives: one table is both what yargs and parseOptions read and what the command's handler takes.

/** One option, in the shape yargs takes. */
export interface OptionSpec {
  type: 'string' | 'boolean' | 'number';
  describe: string;
  default?: string | boolean | number | readonly string[];
  array?: boolean;
  demandOption?: boolean;
  /** What the value is, in the usage line: `--textfile-dir DIR`. */
  placeholder?: string;
  /** The heading it is listed under in --help (yargs' own key). */
  group?: string;
  /** Another name it answers to (yargs' own key; its GPU_TEXTFILE_* variable is read too). */
  alias?: string;
}

export type OptionTable = Readonly<Record<string, OptionSpec>>;

/** "max-processes" -> "maxProcesses", as yargs and parseOptions key the values. */
type Camel<S extends string> = S extends `${infer Head}-${infer Tail}` ? `${Head}${Capitalize<Camel<Tail>>}` : S;
type ValueOf<O extends OptionSpec> = (O['type'] extends 'string' ? string : O['type'] extends 'number' ? number : boolean) extends infer V
  ? O extends { array: true }
    ? V[]
    : V
  : never;
/** An option always has a value when it has a default or must be given. */
type Always<O extends OptionSpec> = O extends { default: unknown } ? true : O extends { demandOption: true } ? true : false;

/** A command's parsed arguments, derived from its option table (declared `as const satisfies OptionTable`). */
export type ArgsOf<T extends OptionTable> = {
  -readonly [K in keyof T & string as Always<T[K]> extends true ? Camel<K> : never]: ValueOf<T[K]>;
} & {
  -readonly [K in keyof T & string as Always<T[K]> extends true ? never : Camel<K>]?: ValueOf<T[K]>;
};
