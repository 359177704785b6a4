/**
 * The RTF allowlist (RTF 1.9.1): the control words a rebuilt document may hold and what each
 * destination becomes. Shared by the rebuild and by verify before release; nothing else is.
 */
import type { FindingKind } from '../../findings.ts';

const words = (list: string): ReadonlySet<string> => new Set(list.trim().split(/\s+/));

/**
 * Control words that format or structure the document and reach nothing outside it: document,
 * section, paragraph, character, table, list, font, colour and style formatting, special
 * characters and the properties of kept pictures. RTF 1.9.1 "Appendix: Index of RTF Control
 * Words", limited to what Word and LibreOffice write. Any other word is left out: readers ignore
 * words they do not know, so the text around it reads the same.
 */
export const FORMATTING_WORDS: ReadonlySet<string> = words(`
  rtf ansi mac pc pca ansicpg deff adeff deflang deflangfe adeflang stshfdbch stshfloch stshfhich
  stshfbi uc u upr ud
  f fnil froman fswiss fmodern fscript fdecor ftech fbidi fcharset fprq cpg fname
  red green blue ctint cshade cmaindarkone cmainlightone cmaindarktwo cmainlighttwo caccentone
  caccenttwo caccentthree caccentfour caccentfive caccentsix chyperlink cfollowedhyperlink
  cbackgroundone ctextone cbackgroundtwo ctexttwo
  s cs ds ts tsrowd sbasedon snext slink sautoupd shidden spriority sqformat ssemihidden
  sunhideused slocked styrsid additive
  par pard plain sect sectd line page column softline softpage softcol tab cell row nestcell
  nestrow lastrow
  chftn chftnsep chftnsepc chatn chdate chdpl chdpa chtime chpgn sectnum
  bullet emdash endash emspace enspace qmspace lquote rquote ldblquote rdblquote zwj zwnj zwbo
  zwnbo ltrmark rtlmark
  b i ul ulnone uld uldb uldash uldashd uldashdd ulhair ulth ulw ulwave ulc ulldash ulthd
  ulthdash ulthdashd ulthdashdd ulthldash ululdbwave strike striked caps scaps v outl shad embo
  impr sub super nosupersub up dn fs afs expnd expndtw kerning charscalex cf cb chcbpat chcfpat
  chshdng highlight lang langfe langnp langfenp alang noproof rtlch ltrch loch hich dbch ab ai
  af acf aexpnd aoutl ascaps ashad astrike aul auld auldb aulnone aulw aup adn adeflang
  webhidden spec charrsid insrsid delrsid pararsid sectrsid rsid rsidroot deleted revised
  revauth revauthdel revdttm revdttmdel crauth crdate
  ql qr qc qj qd qk qt fi li ri lin rin sb sa sl slmult sbauto saauto keep keepn widctlpar
  nowidctlpar hyphpar intbl itap outlinelevel pagebb noline ltrpar rtlpar nosnaplinegrid
  snaptogridincell contextualspace adjustright aspalpha aspnum faauto fahang facenter faroman
  favar fafixed nooverflow nocwrap nowwrap cufi culi curi lisa lisb ilvl ls tx tqr tqc tqdec
  tldot tlhyph tlul tlth tleq tb tlmdot
  brdrt brdrb brdrl brdrr brdrbtw brdrbar box brdrs brdrth brdrsh brdrdb brdrdot brdrdash
  brdrhair brdrinset brdroutset brdrtriple brdrtnthsg brdrthtnsg brdrtnthtnsg brdrtnthmg
  brdrthtnmg brdrtnthtnmg brdrtnthlg brdrthtnlg brdrtnthtnlg brdrwavy brdrwavydb brdrdashsm
  brdrdashd brdrdashdd brdrdashdotstr brdremboss brdrengrave brdrframe brdrnone brdrnil brdrw
  brdrcf brsp brdrtbl
  shading cfpat cbpat bghoriz bgvert bgfdiag bgbdiag bgcross bgdcross bgdkhoriz bgdkvert
  bgdkfdiag bgdkbdiag bgdkcross bgdkdcross
  trowd irow irowband trgaph trleft trrh trql trqr trqc trhdr trkeep trbrdrt trbrdrb trbrdrl
  trbrdrr trbrdrh trbrdrv trftsWidth trwWidth trftsWidthB trwWidthB trftsWidthA trwWidthA
  trpaddl trpaddr trpaddt trpaddb trpaddfl trpaddfr trpaddft trpaddfb trspdl trspdr trspdt
  trspdb trspdfl trspdfr trspdft trspdfb trautofit tblrsid tblind tblindtype tbllkhdrrows
  tbllklastrow tbllkhdrcols tbllklastcol tbllknocolband tbllknorowband taprtl rtlrow ltrrow
  trcbpat trcfpat trshdng trpat
  clmgf clmrg clvmgf clvmrg clvertalt clvertalc clvertalb cltxlrtb cltxtbrl cltxbtlr cltxlrtbv
  cltxtbrlv clbrdrt clbrdrb clbrdrl clbrdrr clcbpat clcfpat clshdng clftsWidth clwWidth
  clpadl clpadr clpadt clpadb clpadfl clpadfr clpadft clpadfb clNoWrap clhidemark cellx
  clcbpatraw clcfpatraw clshdngraw clbgdkhor clbghoriz
  paperw paperh margl margr margt margb gutter margmirror landscape facingp titlepg
  deftab hyphauto hyphcaps hyphconsec hyphhotz widowctrl ftnbj ftnstart ftnrstcont ftnrstpg
  ftnrestart ftnnar ftnnalc ftnnauc ftnnrlc ftnnruc ftntj aenddoc aendnotes aftnbj aftnstart
  aftnrstcont aftnrestart aftnnar aftnnalc aftnnauc aftnnrlc aftnnruc aftntj endnotes enddoc
  fet viewkind viewscale viewzk viewbksp formshade dntblnsbdb expshrtn noxlattoyen
  nolnhtadjtbl lytexcttp lytprtmet useltbaln alntblind lnbrkrule splytwnine ftnlytwnine
  htmautsp allowfieldendsel nojkernpunct dghspace dgvspace dghorigin dgvorigin dghshow dgvshow
  dgmargin jcompress jexpand snaptogridincell themelang themelangfe themelangcs rtlgutter
  ltrsect rtlsect ltrdoc rtldoc nogrowautofit noultrlspc nospaceforul nobrkwrptbl
  donotshowmarkup donotshowcomments donotshowinsdel donotshowprops showplaceholdtext
  asianbrkrule newtblstyruls splytwnine validatexml ignoremixedcontent saveinvalidxml
  showxmlerrors horzdoc vertdoc pgbrdrhead pgbrdrfoot pgbrdrt pgbrdrb pgbrdrl pgbrdrr
  pgbrdropt pgbrdrsnap fromtext truncex nocolbal sprstsp sprsspbf otblrul transmf swpbdr
  brkfrm sprstsm wraptrsp psover bdrrlswsix oldlinewrap notabind wrppunct prcolbl
  noextrasprl nocxsptable lnongrid
  sbknone sbkcol sbkpage sbkeven sbkodd cols colsx colno colsr colw linebetcol linex linemod
  linestarts linerestart lineppage linecont pgwsxn pghsxn marglsxn margrsxn margtsxn margbsxn
  guttersxn lndscpsxn titlepg headery footery pgnstarts pgncont pgnrestart pgnx pgny pgndec
  pgnucrm pgnlcrm pgnucltr pgnlcltr pgnhn pgnhnsh pgnhnsp pgnhnsc pgnhnsm pgnhnsn vertalt
  vertalb vertalc vertalj sectunlocked sectdefaultcl sectlinegrid sectexpand sectspecifycl
  sectspecifyl  endnhere binfsxn binsxn stextflow horzsect vertsect
  sftnbj sftnstart sftnrstcont sftnrstpg sftnrestart sftnnar sftnnalc sftnnauc sftnnrlc
  sftnnruc saftnnar saftnnalc saftnnauc saftnnrlc saftnnruc saftnstart saftnrstcont
  saftnrestart
  listid listtemplateid listsimple listhybrid listrestarthdn liststyleid levelstartat
  levelnfc levelnfcn leveljc leveljcn levelfollow levelspace levelindent levellegal
  levelnorestart levelold levelprev levelprevspace levelpicture levelpicturenosize
  leveltemplateid lvltentative listoverridecount listoverridestartat listoverrideformat
  pnlvl pnlvlblt pnlvlbody pnlvlcont pnnumonce pnacross pnhang pnrestart pncard pndec
  pnucltr pnucrm pnlcltr pnlcrm pnord pnordt pnb pni pncaps pnscaps pnul pnuld pnuldb pnulnone
  pnulw pnstrike pnf pnfs pncf pnindent pnsp pnprev pnqc pnql pnqr pnstart pnrnot pnrstart
  pnrstop
  ftnalt
  absw absh phmrg phpg phcol posx posxc posxi posxo posxl posxr posy posyc posyt posyb posyin
  posyout posyil pvmrg pvpg pvpara dxfrtext dfrmtxtx dfrmtxty nowrap overlay frmtxlrtb
  frmtxtbrl frmtxbtlr frmtxlrtbv frmtxtbrlv absnoovrlp wrapdefault wraparound wraptight
  wrapthrough dropcapli dropcapt abslock tposx tposxc tposxi tposxo tposxl tposxr tposy tposyc
  tposyt tposyb tposyin tposyout tposyil tphmrg tphpg tphcol tpvmrg tpvpg tpvpara tdfrmtxtLeft
  tdfrmtxtRight tdfrmtxtTop tdfrmtxtBottom tabsnoovrlp
  picw pich picwgoal pichgoal picscalex picscaley picscaled piccropl piccropr piccropt
  piccropb picbmp picbpp pngblip jpegblip emfblip wmetafile dibitmap wbmbitspixel wbmplanes
  wbmwidthbytes
  yr mo dy hr min sec version vern edmins nofpages nofwords nofchars nofcharsws id
  fldlock flddirty fldedit fldpriv
  pgdsc pgdscuse pgdscnxt
  xef txe rxe bxe ixe tcf tcl
  pgp ipgp
  fcs cgrid hyphlead hyphtrail hyphmax flomajor fbimajor flominor fbiminor fhimajor fhiminor
  fdbmajor fdbminor fbias clshdrawnil tsvertalt tsvertalc tsvertalb tsbrdrt tsbrdrl tsbrdrb
  tsbrdrr tsbrdrdgl tsbrdrdgr tsbrdrh tsbrdrv tscellwidth tscellwidthfts tscellpaddt
  tscellpaddb tscellpaddl tscellpaddr tscellpaddft tscellpaddfb tscellpaddfl tscellpaddfr yts
  nouicompat noqfpromote donotembedsysfont relyonvml donotembedlingdata grfdocevents
  lytcalctblwd lyttblrtgr usenormstyforlist noindnmbrts felnbrelev indrlsweleven noafcnsttbl
  afelev utinl hwelev spltpgpar notcvasp notbrkcnstfrctbl notvatxbx krnprsnet cachedcolbal
  nofeaturethrottle ilfomacatclnup trackmoves trackformatting fracwidth psz vieww viewh
  pardirnatural rempersonalinfo remdttm
`);

/**
 * Destinations kept with what is in them (still filtered word by word). The document's own
 * tables and text: fonts, colours, styles, lists, headers, footers, footnotes, comments,
 * bookmarks, index and contents entries, fields (judged by their instruction), pictures, and the
 * information group (reduced to its allowed fields, as OOXML core properties are).
 */
export const KEPT_DESTINATIONS: ReadonlySet<string> = words(`
  fonttbl falt panose fname colortbl stylesheet listtable list listlevel listname listtext
  leveltext levelnumbers listoverridetable listoverride lfolevel pntext pntxta pntxtb pn
  pnseclvl header headerl headerr headerf footer footerl footerr footerf footnote ftnsep
  ftnsepc ftncn aftnsep aftnsepc aftncn annotation atnid atnauthor atndate atnref atnparent
  atrfstart atrfend bkmkstart bkmkend xe tc field fldinst fldrslt pict shppict
  info title subject author manager company operator category keywords comment doccomm
  creatim revtim printim buptim generator defchp defpap ts cs ud upr revtbl pgdsctbl pgdsc
  txe rxe bxe nesttableprops
`);

/**
 * Destinations dropped whole and silently: layout caches and tables that readers rebuild or do
 * without, holding nothing of the document's text (theme and colour scheme data, latent style
 * lists, revision session ids, XML namespace tables, Word's graphics filter list, fallbacks kept
 * by Word for older readers) and shapes, whose picture for readers without shapes stays
 * (`\shprslt`).
 */
export const SILENT_DESTINATIONS: ReadonlySet<string> = words(`
  themedata colorschememapping latentstyles lsdlockedexcept rsidtbl xmlnstbl wgrffmtfilter
  mmathPr mmath nonshppict shpinst shptxt do dptxbxtext saveprevpict blipuid picprop
  pgdscno headeryb footeryb fchars lchars oldcprops oldpprops oldsprops oldtprops
  listpicture hyphen userprops pxe nonesttables
`);

/**
 * Destinations removed as active or hidden content, with the finding each is reported as.
 * `\object` is handled apart (its `\result` stays).
 */
export const REMOVED_DESTINATIONS: ReadonlyMap<string, FindingKind> = new Map<string, FindingKind>([
  // Objects' data anywhere, and the parts of an object outside an object group.
  ['objdata', 'embedded-object'],
  ['objclass', 'embedded-object'],
  ['objname', 'embedded-object'],
  ['objalias', 'embedded-object'],
  ['objsect', 'embedded-object'],
  ['objtime', 'embedded-object'],
  ['oleclsid', 'embedded-object'],
  // A template Word attaches (and fetches) when the document opens.
  ['template', 'external-relationship'],
  ['hlinkbase', 'external-relationship'],
  ['linkval', 'external-relationship'],
  // Word's data store: custom XML parts in a compound file.
  ['datastore', 'hidden-data'],
  ['datafield', 'hidden-data'],
  ['docvar', 'hidden-data'],
  ['propname', 'document-metadata'],
  ['staticval', 'document-metadata'],
  ['password', 'document-metadata'],
  ['passwordhash', 'document-metadata'],
  ['protusertbl', 'document-metadata'],
  ['formfield', 'hidden-data'],
  ['ffname', 'hidden-data'],
  ['ffentrymcr', 'vba-macro'],
  ['ffexitmcr', 'vba-macro'],
  ['ffdeftext', 'hidden-data'],
  ['ffformat', 'hidden-data'],
  ['ffhelptext', 'hidden-data'],
  ['ffstattext', 'hidden-data'],
  ['ffl', 'hidden-data'],
  ['mhtmltag', 'external-relationship'],
  ['htmltag', 'script'],
  ['xmlopen', 'hidden-data'],
  ['xmlattr', 'hidden-data'],
  ['xmlclose', 'hidden-data'],
  ['bkmkpub', 'external-relationship'],
  ['pubauto', 'external-relationship'],
  ['filetbl', 'external-relationship'],
  ['file', 'external-relationship'],
  ['private', 'hidden-data'],
  ['ebcstart', 'hidden-data'],
  ['ebcend', 'hidden-data'],
]);

/** Words of an object group that say the object is linked to (and updated from) a file. */
export const LINKED_OBJECT_WORDS: ReadonlySet<string> = words('objlink objautlink');

/** Picture kinds (RTF 1.9.1 "Pictures"): the word that names the data's format, and its file. */
export const PICTURE_KINDS: ReadonlyMap<string, 'png' | 'jpg' | 'emf' | 'wmf' | 'bmp'> = new Map([
  ['pngblip', 'png'],
  ['jpegblip', 'jpg'],
  ['emfblip', 'emf'],
  ['wmetafile', 'wmf'],
  ['dibitmap', 'bmp'],
] as const);

/** Picture words the rebuild keeps (sizes, scale and crop); the kind word it writes itself. */
export const PICTURE_WORDS: ReadonlySet<string> = words(`
  picw pich picwgoal pichgoal picscalex picscaley picscaled piccropl piccropr piccropt
  piccropb picbmp picbpp
`);

/**
 * Control symbols that are text or break rules (RTF 1.9.1 "Special Characters"): `\\`, `\{`, `\}`
 * escape the syntax characters, `\~` `\-` `\_` are spaces and hyphens, `\:` marks an index
 * subentry, `\|` a formula character; `\*` marks the next destination as ignorable.
 */
export const KEPT_SYMBOLS: ReadonlySet<string> = new Set(['\\', '{', '}', '~', '-', '_', ':', '|']);
