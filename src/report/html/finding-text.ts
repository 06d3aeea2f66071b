// A finding's sentence as the page shows it. The findings speak MiB (as the text report and the CSV
// trail do); the page's charts and tables speak GiB, so the page says its findings in GiB too.

const NUMBER = String.raw`(\d+(?:\.\d+)?)`;
const gib = (mib: string) => (Number(mib) / 1024).toFixed(1);

/** "grows 1400 MiB a day (6000 to 10200 MiB ...)" -> "grows 1.4 GiB a day (5.9 to 10.0 GiB ...)". */
export const inGiB = (sentence: string): string =>
  sentence
    // A range names its unit once, after the second number: both ends are MiB.
    .replace(new RegExp(`${NUMBER} to ${NUMBER} MiB`, 'g'), (_, from: string, to: string) => `${gib(from)} to ${gib(to)} GiB`)
    .replace(new RegExp(`${NUMBER} MiB`, 'g'), (_, mib: string) => `${gib(mib)} GiB`);
